"""The signed session token a crowd or link worker carries instead of a cookie.

MTurk's and Prolific's query parameters are unsigned: anybody can type a workerId. What the server accepted on
arrival (after checking what it can) is bound into a token signed with django.core.signing, and every later
request carries that token in the page (hidden field `crowd_token`, the htmx header X-Finegrain-Session, or `?ct=`
on a link) because a third-party iframe may get no cookies at all. Bound to one assignment, the token is also
that assignment's CSRF secret: a POST must carry it (views/crowd.py).
"""

from dataclasses import dataclass

from django.core import signing

from ..models import Annotator

SESSION_SALT = "finegrain.crowd.session"
HEADER = "HTTP_X_FINEGRAIN_SESSION"
FIELD = "crowd_token"
QUERY = "ct"


@dataclass
class CrowdSession:
    annotator: Annotator
    project_id: int
    provider: str
    assignment: str | None  # the assignment's public id, once one is bound
    link: int | None
    token: str
    # A Prolific arrival sent to the screening test first: its batch (public id) and Prolific submission, so that
    # passing the test leads on to the HIT (claims.after_screening).
    batch: str | None = None
    submission: str | None = None


def sign_session(*, annotator: Annotator, project_id: int, provider: str, assignment=None, link=None, batch=None,
                 submission: str | None = None) -> str:
    data = {"n": annotator.pk, "p": project_id, "v": provider,
            "a": str(assignment.public_id) if assignment is not None else None,
            "l": link.pk if link is not None else None}
    if batch is not None:
        data.update(b=str(batch.public_id), s=submission)
    return signing.dumps(data, salt=SESSION_SALT, compress=True)


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def token_in(request) -> str:
    if token := request.META.get(HEADER):
        return token
    # Only a form carries the field; a JSON body (the REST API) is left for its own parser.
    if request.method == "POST" and (request.content_type or "").split(";")[0] in FORM_TYPES:
        if token := request.POST.get(FIELD):
            return token
    return request.GET.get(QUERY) or ""


def read_session(token: str, *, max_age: int) -> CrowdSession | None:
    """The session a token carries, or None if it is forged, altered or older than `max_age` seconds."""
    if not token:
        return None
    try:
        data = signing.loads(token, salt=SESSION_SALT, max_age=max_age)
    except signing.BadSignature:  # includes SignatureExpired
        return None
    annotator = Annotator.objects.filter(pk=data.get("n"), provider=data.get("v")).first()
    if annotator is None:
        return None
    return CrowdSession(annotator=annotator, project_id=data["p"], provider=data["v"], assignment=data.get("a"),
                        link=data.get("l"), token=token, batch=data.get("b"), submission=data.get("s"))


def session_of(request) -> CrowdSession | None:
    """The request's crowd session (cached on the request); None without a valid token."""
    if not hasattr(request, "_crowd_session"):
        from django.conf import settings

        request._crowd_session = read_session(token_in(request),
                                              max_age=settings.FINEGRAIN_CROWD_SESSION_HOURS * 3600)
    return request._crowd_session


def crowd_may_work(annotator: Annotator, project) -> bool:
    """A crowd worker works where a provider sent them (a claim in the project); a link holder where the
    manager's link, not revoked or expired, points."""
    if annotator.provider == Annotator.Provider.LINK:
        link = getattr(annotator, "private_link", None)
        return link is not None and link.project_id == project.pk and link.is_usable()
    return annotator.assignments.filter(hit__project=project, crowd_claim__isnull=False).exists()
