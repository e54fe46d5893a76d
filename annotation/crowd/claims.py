"""A worker arrives from a provider: check what can be checked, reserve, and bind the claim to a signed token.

MTurk sends assignmentId, hitId, workerId and turkSubmitTo unsigned. We check that the hitId is a HIT we
published in this batch, that turkSubmitTo is one of MTurk's origins, and that an assignmentId seen before keeps
its worker; MTurk's own API confirms the worker on sync (sync.py).
"""

import re
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import Annotator, Assignment, CrowdBatch, CrowdClaim, CrowdHit, PrivateLink
from ..quality.qualification import reservation_refusal
from ..services.assignment import WorkRefused, lock_hit, reserve_next_hit
from .tokens import sign_session

WORKER_ID = re.compile(r"^[A-Z0-9]{1,64}$")
PROLIFIC_ID = re.compile(r"^[0-9a-f]{24}$")


class ClaimRefused(Exception):
    status_code = 403


class NeedsScreening(Exception):
    """The worker must pass the in-app screening test first (annotation/quality); `token` carries them there."""

    def __init__(self, token: str):
        self.token = token
        super().__init__("screening needed")


def submit_origin(turk_submit_to: str) -> str:
    """The allowed origin turkSubmitTo names, or ClaimRefused."""
    parts = urlsplit(turk_submit_to or "")
    origin = f"{parts.scheme}://{parts.netloc}"
    if origin not in settings.FINEGRAIN_MTURK_SUBMIT_ORIGINS or parts.path not in ("", "/"):
        raise ClaimRefused("This HIT can only be submitted back to Mechanical Turk.")
    return origin


def _crowd_annotator(provider: str, worker_id: str) -> Annotator:
    annotator, _ = Annotator.objects.get_or_create(provider=provider, external_id=worker_id)
    if not annotator.may_work:
        raise ClaimRefused(f"Your worker account is {annotator.get_status_display().lower()} for this project.")
    return annotator


def _reserve_hit(hit, annotator: Annotator, project) -> Assignment:
    """A place on this very HIT (the provider chose it), under the HIT's lock, never beyond N."""
    now = timezone.now()
    with transaction.atomic():
        lock_hit(hit.pk)
        mine = Assignment.objects.filter(hit=hit, annotator=annotator).first()
        if mine is not None and mine.status in (Assignment.Status.SUBMITTED, Assignment.Status.RESERVED):
            return mine
        if Assignment.objects.holding_a_place(now).filter(hit=hit).count() >= project.annotators_per_unit:
            raise ClaimRefused("This HIT already has all the annotators it needs.")
        expires = now + timedelta(minutes=project.reservation_minutes)
        if mine is None:
            return Assignment.objects.create(hit=hit, annotator=annotator, reserved_at=now, expires_at=expires)
        mine.status, mine.reserved_at, mine.expires_at = Assignment.Status.RESERVED, now, expires
        mine.save(update_fields=["status", "reserved_at", "expires_at"])
        return mine


def _bind(*, assignment, batch, provider, external_assignment_id, external_hit_id, worker_id, submit_to=""):
    try:
        with transaction.atomic():
            claim, created = CrowdClaim.objects.get_or_create(
                provider=provider, external_assignment_id=external_assignment_id,
                defaults={"assignment": assignment, "batch": batch, "external_hit_id": external_hit_id,
                          "worker_id": worker_id, "submit_to": submit_to})
    except IntegrityError:
        raise ClaimRefused("This assignment is already bound to another provider assignment.") from None
    if claim.worker_id != worker_id or claim.assignment_id != assignment.pk:
        raise ClaimRefused("This assignment belongs to another worker.")
    return claim


def mturk_arrive(*, batch: CrowdBatch, assignment_id: str, hit_id: str, worker_id: str, turk_submit_to: str):
    """Returns (assignment, claim, session token) for an accepted MTurk assignment."""
    if not all(WORKER_ID.match(value or "") for value in (worker_id, assignment_id, hit_id)):
        raise ClaimRefused("The parameters MTurk sends are missing or malformed.")
    origin = submit_origin(turk_submit_to)
    crowd_hit = CrowdHit.objects.select_related("hit").filter(batch=batch, external_id=hit_id).first()
    if crowd_hit is None:
        raise ClaimRefused("This HIT was not published by us.")
    known = CrowdClaim.objects.filter(provider="mturk", external_assignment_id=assignment_id).first()
    if known is not None and known.worker_id != worker_id:
        raise ClaimRefused("This assignment belongs to another worker.")
    annotator = _crowd_annotator(Annotator.Provider.MTURK, worker_id)
    if annotator.qualified_at is None:
        # MTurk let this worker accept only with our test qualification at 100 (the HIT type requires it).
        annotator.qualified_at = timezone.now()
        Annotator.objects.filter(pk=annotator.pk).update(qualified_at=annotator.qualified_at)
    try:
        assignment = known.assignment if known else _reserve_hit(crowd_hit.hit, annotator, batch.project)
    except WorkRefused as refusal:
        raise ClaimRefused(str(refusal)) from refusal
    claim = _bind(assignment=assignment, batch=batch, provider="mturk", external_assignment_id=assignment_id,
                  external_hit_id=hit_id, worker_id=worker_id, submit_to=origin)
    token = sign_session(annotator=annotator, project_id=batch.project_id, provider="mturk", assignment=assignment)
    return assignment, claim, token


def prolific_arrive(*, batch: CrowdBatch, participant_id: str, study_id: str, session_id: str):
    if not (PROLIFIC_ID.match(participant_id or "") and study_id == batch.external_id and session_id):
        raise ClaimRefused("This study link is missing Prolific's parameters or names another study.")
    known = CrowdClaim.objects.filter(provider="prolific", external_assignment_id=session_id).first()
    if known is not None and known.worker_id != participant_id:
        raise ClaimRefused("This session belongs to another participant.")
    annotator = _crowd_annotator(Annotator.Provider.PROLIFIC, participant_id)
    if known is not None:
        assignment = known.assignment
    else:
        if reservation_refusal(annotator, batch.project) and annotator.may_work:
            raise NeedsScreening(sign_session(annotator=annotator, project_id=batch.project_id,
                                              provider="prolific"))
        try:
            assignment = reserve_next_hit(annotator, batch.project, batch.task)
        except WorkRefused as refusal:
            raise ClaimRefused(str(refusal)) from refusal
        if assignment is None:
            raise ClaimRefused("Every HIT of this study is taken; please return the study on Prolific.")
    _bind(assignment=assignment, batch=batch, provider="prolific", external_assignment_id=session_id,
          external_hit_id=study_id, worker_id=participant_id)
    token = sign_session(annotator=annotator, project_id=batch.project_id, provider="prolific",
                         assignment=assignment)
    return assignment, token


def link_next(*, link: PrivateLink, annotator: Annotator):
    """The link holder's next HIT of the link's task, with its session token; (None, None) when none is left."""
    if reservation_refusal(annotator, link.project) and annotator.may_work:
        raise NeedsScreening(sign_session(annotator=annotator, project_id=link.project_id, provider="link",
                                          link=link))
    try:
        assignment = reserve_next_hit(annotator, link.project, link.task)
    except WorkRefused as refusal:
        raise ClaimRefused(str(refusal)) from refusal
    if assignment is None:
        return None, None
    return assignment, sign_session(annotator=annotator, project_id=link.project_id, provider="link",
                                    assignment=assignment, link=link)
