"""What any request may carry, checked at the door so that bad input is a 400 with a message, never a 500.

`RefuseUnstorableText` (a middleware, first after the security and static-file ones) refuses a request whose path,
query parameters, form fields, file names, cookies or headers hold text the database cannot store
(annotation.storable_text): PostgreSQL refuses NUL in a query as in a row, so `?project=%00` would otherwise fail
inside whichever view filters on it. One check here covers every view, present and future.

`JSONParser` (the REST API's JSON parser, which reads the body through request.body and so within Django's
DATA_UPLOAD_MAX_MEMORY_SIZE) refuses nesting deeper than any of the API's bodies (Python's parser raises
RecursionError near a thousand levels, and deep values break the code that reads them long before) and unstorable
text anywhere in the body, keys included.
"""

from django.http import HttpResponse, JsonResponse
from rest_framework import exceptions, parsers, status

from corpus.storable_text import unstorable

# Every body of the API is an object of scalars and short lists (answers, a reservation, an override).
MAX_JSON_DEPTH = 32


def _first_problem(request) -> str | None:
    if reason := unstorable(request.path):
        return f"The address {reason}."
    # QueryDict decodes with replacement characters, so only NUL can reach these; the rule is the same anyway.
    sources = [("query parameter", request.GET), ("cookie", request.COOKIES),
               ("header", {key: value for key, value in request.META.items() if key.startswith("HTTP_")})]
    if request.method == "POST" and request.content_type in ("application/x-www-form-urlencoded",
                                                             "multipart/form-data"):
        sources.append(("form field", request.POST))
        sources.append(("uploaded file name", {key: upload.name for key, upload in request.FILES.items()}))
    pairs = [(kind, list(mapping.lists() if hasattr(mapping, "lists")
                         else ((key, [value]) for key, value in mapping.items()))) for kind, mapping in sources]
    # Every request reaches this: one scan of all its text together answers for nearly all of them; only a refused
    # one is read again, piece by piece, to say where the problem is.
    if unstorable("\n".join(text for _kind, items in pairs for key, values in items
                             for text in (key, *(value for value in values if isinstance(value, str))))) is None:
        return None
    for kind, items in pairs:
        for key, values in items:
            if reason := unstorable(key):
                return f"The name of a {kind} {reason}."
            for value in values:
                if isinstance(value, str) and (reason := unstorable(value)):
                    return f"The {kind} {key!r} {reason}."
    return None


class RefuseUnstorableText:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        problem = _first_problem(request)
        if problem is None:
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": problem}, status=status.HTTP_400_BAD_REQUEST)
        return HttpResponse(f"Bad request. {problem}\n", status=status.HTTP_400_BAD_REQUEST,
                            content_type="text/plain; charset=utf-8")


def json_problem(data, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why a parsed JSON body is refused (too deep, or unstorable text at some place), or None. Iterative: the
    check itself must not recurse."""
    pending = [(data, "", 1)]
    while pending:
        value, where, depth = pending.pop()
        if isinstance(value, str):
            if reason := unstorable(value):
                return f"The value at {where or 'the top'} {reason}."
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > max_depth:
            return f"The body nests deeper than {max_depth} levels."
        if isinstance(value, dict):
            for key, item in value.items():
                if reason := unstorable(key):
                    return f"A key at {where or 'the top'} {reason}."
                pending.append((item, f"{where}.{key}" if where else key, depth + 1))
        else:
            pending.extend((item, f"{where}[{index}]", depth + 1) for index, item in enumerate(value))
    return None


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError(
                f"JSON parse error - the body nests deeper than {MAX_JSON_DEPTH} levels.") from None
        if problem := json_problem(data):
            raise exceptions.ParseError(problem)
        return data
