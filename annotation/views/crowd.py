"""The worker's way in from a crowd platform or a private link, and the HIT pages' crowd mode.

Framing (MTurk shows a HIT page inside its own iframe): only MTurk's worker origins may frame MTurk pages
(CSP frame-ancestors, X-Frame-Options left out only there); Prolific opens studies in a new tab, so its pages
and every other page keep frame-ancestors 'none' and X-Frame-Options DENY. Inside a third-party iframe the
browser may send no cookies: the signed session token travels in the page, and on a POST it replaces the CSRF
cookie (it is bound to one assignment and cannot be forged); a POST without a valid token gets the normal CSRF
check.
"""

from functools import wraps

from django.conf import settings
from django.http import HttpResponseRedirect
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from django_ratelimit.decorators import ratelimit

from ..crowd import claims
from ..crowd.links import link_annotator, link_from_token
from ..crowd.registry import COMPLETE_URL, PREVIEW_ASSIGNMENT_ID, WORKER_ORIGINS
from ..crowd.tokens import QUERY, session_of, token_in
from ..models import Annotator, Assignment, CrowdBatch, CrowdClaim, CrowdHit, Hit


def _rate(group, request):
    return settings.FINEGRAIN_LINK_RATE


def mturk_framing() -> dict:
    """CSP for pages MTurk frames: its worker sites, plus FINEGRAIN_MTURK_EXTRA_FRAME_ANCESTORS (empty in production;
    a test's loopback stand-in for MTurk). Read per response, so the setting is never frozen at import."""
    return {"frame-ancestors": [*WORKER_ORIGINS, *settings.FINEGRAIN_MTURK_EXTRA_FRAME_ANCESTORS]}


def _framable(response):
    response.xframe_options_exempt = True  # CSP frame-ancestors says who may frame it
    response._csp_replace = mturk_framing()
    return response


def mturk_framable(view):
    """Only MTurk's worker sites may frame this view; X-Frame-Options is dropped because CSP says who may."""
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        return _framable(view(request, *args, **kwargs))

    return wrapper


def refused(request, message: str, status: int = 403, *, framable: bool = False):
    response = render(request, "annotation/crowd/refused.html", {"message": message}, status=status)
    return _framable(response) if framable else response


def with_token(url: str, token: str) -> str:
    return f"{url}?{QUERY}={token}"


# --- The HIT pages in crowd mode. annotation/urls.py wraps the four HIT views with `crowd_aware`.

def _csrf_refusal(request):
    """The ordinary CSRF check, for POSTs that carry no crowd token (the wrapped views are csrf_exempt)."""
    return CsrfViewMiddleware(lambda req: None).process_view(request, None, (), {})


def crowd_aware(view, *, kind: str = "page"):
    """Let a HIT view serve a crowd/link worker identified by the signed session token in the page."""
    framed = mturk_framable(view)

    @csrf_exempt
    @wraps(view)
    def wrapper(request, assignment_id, *args, **kwargs):
        session = session_of(request)
        if session is None:
            if token_in(request):
                return refused(request, "Your session for this HIT is invalid or has expired.")
            if request.method == "POST" and (refusal := _csrf_refusal(request)) is not None:
                return refusal
            return view(request, assignment_id, *args, **kwargs)
        mturk = session.provider == "mturk"
        # The token is bound to one assignment: it is this assignment's CSRF secret and nothing else's.
        if session.assignment != str(assignment_id):
            return refused(request, "This session belongs to another HIT.", framable=mturk)
        assignment = get_object_or_404(Assignment, public_id=assignment_id, annotator=session.annotator)
        if assignment.status == Assignment.Status.DISCARDED:
            return refused(request, "This HIT was set aside: the provider does not know it as yours.", 410,
                           framable=mturk)
        if assignment.status == Assignment.Status.SUBMITTED:
            if request.method == "POST":
                return refused(request, "This HIT was already submitted; nothing changed.", 409, framable=mturk)
            return HttpResponseRedirect(with_token(reverse("crowd_done", args=[assignment_id]), session.token))
        if request.method == "POST" and session.provider != "link" and (
                assignment.status != Assignment.Status.RESERVED or assignment.expires_at <= timezone.now()):
            return refused(request, "The time for this HIT is over; it can no longer be changed.", 410,
                           framable=mturk)
        response = (framed if mturk else view)(request, assignment_id, *args, **kwargs)
        if kind in ("submit", "return") and response.status_code == 302:
            return HttpResponseRedirect(with_token(reverse("crowd_done", args=[assignment_id]), session.token))
        return response

    return wrapper


# --- MTurk

def _preview(request, batch: CrowdBatch, hit_id: str):
    """The task and the HIT's size, not its items: anybody may preview, and only a HIT's holder reads its items
    (annotation.permissions: beside another HIT of the same summary or document they would tell its checks)."""
    crowd_hit = CrowdHit.objects.select_related("hit").filter(batch=batch, external_id=hit_id).first()
    hit = crowd_hit.hit if crowd_hit else Hit.objects.filter(crowd_hits__batch=batch).first()
    count = hit.units.count() if hit else 0
    return render(request, "annotation/crowd/preview.html", {"batch": batch, "hit": hit, "count": count})


@mturk_framable
@require_GET
@ratelimit(key="ip", rate=_rate, block=True)
def mturk_entry(request, batch_id):
    """MTurk loads this in its iframe: a preview while the worker only looks, the HIT once accepted."""
    batch = get_object_or_404(CrowdBatch, public_id=batch_id, provider="mturk")
    assignment_id = request.GET.get("assignmentId", "")
    if not assignment_id or assignment_id == PREVIEW_ASSIGNMENT_ID:
        return _preview(request, batch, request.GET.get("hitId", ""))  # reserves nothing
    try:
        assignment, _, token = claims.mturk_arrive(
            batch=batch, assignment_id=assignment_id, hit_id=request.GET.get("hitId", ""),
            worker_id=request.GET.get("workerId", ""), turk_submit_to=request.GET.get("turkSubmitTo", ""))
    except claims.ClaimRefused as refusal:
        return refused(request, str(refusal), framable=True)
    return HttpResponseRedirect(with_token(reverse("hit_page", args=[assignment.public_id]), token))


# --- Prolific (a new tab: never framed)

@require_GET
@ratelimit(key="ip", rate=_rate, block=True)
def prolific_entry(request, batch_id):
    batch = get_object_or_404(CrowdBatch, public_id=batch_id, provider="prolific")
    try:
        assignment, token = claims.prolific_arrive(
            batch=batch, participant_id=request.GET.get("PROLIFIC_PID", ""),
            study_id=request.GET.get("STUDY_ID", ""), session_id=request.GET.get("SESSION_ID", ""))
    except claims.NeedsScreening as needed:
        return _screening(batch.project, needed.token)
    except claims.ClaimRefused as refusal:
        return refused(request, str(refusal), refusal.status_code)
    return HttpResponseRedirect(with_token(reverse("hit_page", args=[assignment.public_id]), token))


# --- Private links

def _screening(project, token: str):
    return HttpResponseRedirect(with_token(reverse("work_screening", args=[project.slug]), token))


def after_screening(request, session, project):
    """A link holder or Prolific participant who passed the screening test goes straight on to their HIT: they
    have no account page to go back to, and no log-in to be sent to."""
    try:
        assignment, token = claims.after_screening(session)
    except claims.NeedsScreening as needed:
        return _screening(project, needed.token)
    except claims.ClaimRefused as refusal:
        return refused(request, str(refusal), refusal.status_code)
    if assignment is None:
        return render(request, "annotation/crowd/link_done.html", {"link": session.annotator.private_link})
    return HttpResponseRedirect(with_token(reverse("hit_page", args=[assignment.public_id]), token))


def _link_next(request, link, annotator):
    try:
        assignment, token = claims.link_next(link=link, annotator=annotator)
    except claims.NeedsScreening as needed:
        return _screening(link.project, needed.token)
    except claims.ClaimRefused as refusal:
        return refused(request, str(refusal))
    if assignment is None:
        return render(request, "annotation/crowd/link_done.html", {"link": link})
    return HttpResponseRedirect(with_token(reverse("hit_page", args=[assignment.public_id]), token))


@require_GET
@ratelimit(key="ip", rate=_rate, block=True)
def link_entry(request, token):
    link = link_from_token(token)
    if link is None:
        return refused(request, "This link is invalid, has expired or was revoked.", 404)
    annotator = link_annotator(link=link)
    status = annotator.status_in(link.project)
    if status != Annotator.Status.ACTIVE:
        return refused(request, f"This link's annotator is {Annotator.Status(status).label.lower()}.")
    return _link_next(request, link, annotator)


@csrf_exempt  # the signed session token in the form replaces the CSRF cookie
@require_POST
@ratelimit(key="ip", rate=_rate, block=True)
def link_next(request):
    session = session_of(request)
    if session is None or session.provider != "link" or session.link is None:
        return refused(request, "Your session is invalid or has expired.")
    link = session.annotator.private_link
    if not link.is_usable():
        return refused(request, "This link has expired or was revoked.")
    if (status := session.annotator.status_in(link.project)) != Annotator.Status.ACTIVE:
        return refused(request, f"This link's annotator is {Annotator.Status(status).label.lower()}.")
    return _link_next(request, link, session.annotator)


# --- After the submission: back to the provider

def _render_done(request, context):
    return render(request, "annotation/crowd/done.html", context)


@require_GET
def done(request, assignment_id):
    """The finished HIT: MTurk gets the assignmentId posted to {turkSubmitTo}/mturk/externalSubmit, Prolific
    gets the participant back with the completion code, a link holder moves on to the next HIT."""
    session = session_of(request)
    if session is None or session.assignment != str(assignment_id):
        return refused(request, "Your session is invalid or has expired.")
    assignment = get_object_or_404(Assignment, public_id=assignment_id, annotator=session.annotator)
    claim = CrowdClaim.objects.select_related("batch").filter(assignment=assignment).first()
    context = {"assignment": assignment, "claim": claim, "session": session,
               "submitted": assignment.status == Assignment.Status.SUBMITTED}
    if claim is not None and claim.provider == "mturk":
        origin = claims.submit_origin(claim.submit_to)
        context["submit_url"] = origin + "/mturk/externalSubmit"
        response = _framable(_render_done(request, context))
        # The page posts the assignment to MTurk: its form may target that one (allowed) origin as well.
        response._csp_update = {"form-action": [origin]}
        return response
    if claim is not None and claim.provider == "prolific":
        context["complete_url"] = COMPLETE_URL.format(code=claim.batch.completion_code)
    return _render_done(request, context)
