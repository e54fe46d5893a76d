"""The signed session token a crowd or link worker carries instead of a cookie, and who is calling.

MTurk's and Prolific's query parameters are unsigned: anybody can type a workerId. What the server accepted on
arrival (after checking what it can) is bound into a token signed with django.core.signing, and every later
request carries that token in the page (hidden field `crowd_token`, the htmx header X-Finegrain-Session, or `?ct=`
on a link) because a third-party iframe may get no cookies at all. Bound to one assignment, the token is also
that assignment's CSRF secret: a POST must carry it (views/crowd.py).

Who is calling is decided once per request, here and in annotation.permissions.current_annotator: a request is
either an account (a log-in, or an API token) or a crowd session, never both. A crowd session is honoured only on
the crowd worker's own routes (`CROWD_ROUTES`: the ways in, the HIT pages, the screening test, the page after
submitting), and there only for what it is bound to (one assignment, or one link or study); everywhere else, the
REST API included, a request carrying a crowd token is refused (`OneCallerPerRequest`). Otherwise a token that
somebody took from a forged arrival could act, through any logged-in account or any route, as the participant
it names.
"""

from dataclasses import dataclass

from django.core import signing
from django.http import HttpResponse, JsonResponse

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


# The routes (URL names) where a crowd session acts: the ways in from a provider or a link, the HIT pages (each
# checks that the session is bound to its assignment), the screening test and the page after submitting.
CROWD_ROUTES = frozenset({
    "crowd_mturk_entry", "crowd_prolific_entry", "crowd_link", "crowd_link_next", "crowd_done",
    "hit_page", "hit_answer", "hit_flag", "hit_submit", "hit_return", "work_screening", "work_instructions",
})


def is_crowd_route(request) -> bool:
    match = getattr(request, "resolver_match", None)
    return match is not None and match.url_name in CROWD_ROUTES


def session_of(request) -> CrowdSession | None:
    """The request's crowd session (cached on the request): None without a valid token, and None on any route
    that is not a crowd worker's (`CROWD_ROUTES`), whatever the request carries."""
    if not is_crowd_route(request):
        return None
    if not hasattr(request, "_crowd_session"):
        from django.conf import settings

        request._crowd_session = read_session(token_in(request),
                                              max_age=settings.FINEGRAIN_CROWD_SESSION_HOURS * 3600)
    return request._crowd_session


MIXED_CALLERS = ("This request carries both a log-in and a crowd worker's session. Log out (or use a private "
                 "window) to work from a crowd platform or a private link, or close the link to work as yourself.")
CROWD_ROUTES_ONLY = ("A crowd worker's session is accepted only on the crowd worker's own pages (the HIT, the "
                     "screening test); the REST API and the other pages act for accounts only.")


class OneCallerPerRequest:
    """Refuses a request that carries a crowd token beside a log-in, or a crowd token on a route that is not a
    crowd worker's (after AuthenticationMiddleware, which sets the log-in; the API's own token log-in is refused
    with every other API request that carries a crowd token)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if not token_in(request):
            return None
        if request.user.is_authenticated:
            return _refusal(request, MIXED_CALLERS)
        if not is_crowd_route(request):
            return _refusal(request, CROWD_ROUTES_ONLY)
        return None


def _refusal(request, message: str):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=403)
    return HttpResponse(f"Forbidden. {message}\n", status=403, content_type="text/plain; charset=utf-8")


def crowd_may_work(annotator: Annotator, project) -> bool:
    """A crowd worker works where a provider sent them (a claim in the project); a link holder where the
    manager's link, not revoked or expired, points."""
    if annotator.provider == Annotator.Provider.LINK:
        link = getattr(annotator, "private_link", None)
        return link is not None and link.project_id == project.pk and link.is_usable()
    return annotator.assignments.filter(hit__project=project, crowd_claim__isnull=False).exists()
