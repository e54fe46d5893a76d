"""Template context: the crowd session, so pages carry its token (hidden field, htmx header) instead of a cookie."""

from .tokens import session_of


def crowd_session(request) -> dict:
    return {"crowd_session": session_of(request)}
