"""`{{ text|error_words }}`: an error stored with an exception's class name ("TransientError: HTTP 503 ...", as the
AI calls and the runs record it, for the logs and the export) read in the manager's words on a page. Our own kinds of
failure keep their message; any other exception's text is Python's, so the page says only that one happened."""

import re

from django import template

register = template.Library()

KNOWN = {
    "PermanentError": "the model refused the request",
    "RateLimited": "the model's provider limited the rate of requests",
    "TransientError": "the model could not be reached",
    "ParseError": "the model's answer could not be read",
    "BackendError": "the call to the model failed",
}
CLASS_NAME = re.compile(r"\b([A-Z][A-Za-z]*(?:Error|Exception|Limited|Exceeded|Interrupt)): ?")


@register.filter
def error_words(text) -> str:
    text = str(text or "")
    match = CLASS_NAME.search(text)
    if match is None:
        return text
    words = KNOWN.get(match.group(1))
    if words is None:
        return f"{text[:match.start()]}an unexpected error, kept in the worker's log for the site's operators"
    return text[:match.start()] + words + (": " + error_words(text[match.end():]) if text[match.end():] else "")
