"""A worker arrives from a provider: check what can be checked, reserve, and bind the claim to a signed token.

MTurk sends assignmentId, hitId, workerId and turkSubmitTo unsigned, and Prolific PROLIFIC_PID, STUDY_ID and
SESSION_ID: anybody can type somebody else's worker id. So an arrival is a claim, and its assignment stays
unconfirmed (`Assignment.confirmed_at`) until the provider's own API says it is that worker's: nothing it does counts
or has consequences before (annotation/quality/policy.py, annotation/crowd/sync.py).

MTurk: we check that the hitId is a HIT we published in this batch, that turkSubmitTo is one of MTurk's origins, and
that an assignmentId seen before keeps its worker; MTurk's API confirms the rest on sync, once the worker submitted
(GetAssignment knows submitted assignments only). Each assignmentId gets an assignment of its own, never one another
claim holds, so a forged claim on a worker id cannot take over the real worker's HIT, nor be renewed. MTurk counts
its own places: a worker it sends is refused only when the HIT's confirmed submissions already fill it.

Prolific: the submission (SESSION_ID) is looked up on arrival; Prolific must know it, for that participant and this
study. When Prolific cannot be reached the participant may work unconfirmed (sync confirms or discards), but not take
the screening test, whose attempts are limited: a forged PROLIFIC_PID must not use up somebody's attempts.

How long an unconfirmed arrival may keep a place from others (AssignmentQuerySet.holding_a_place): no longer than the
provider itself would, i.e. the project's `reservation_minutes`, which is both the MTurk HIT type's
AssignmentDurationInSeconds and the Prolific study's maximum_allowed_time (annotation/crowd/mturk.py, prolific.py);
on MTurk not at all, since MTurk holds its own places.
"""

import re
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from ..models import Annotator, Assignment, CrowdBatch, CrowdClaim, CrowdHit, Hit, PrivateLink
from ..quality.qualification import needs_screening
from ..selectors import KEPT_APART, count_of, had_by, hit_places, labelled_before, overlaps_what_they_had
from ..services.assignment import WorkRefused, reserve_next_hit
from .base import ProviderTransientError
from .registry import get_provider
from .tokens import sign_session

WORKER_ID = re.compile(r"^[A-Z0-9]{1,64}$")
PROLIFIC_ID = re.compile(r"^[0-9a-f]{24}$")
# A Prolific submission id goes into an API path: letters and digits only.
SESSION_ID = re.compile(r"^[A-Za-z0-9]{1,64}$")
# Prolific holds a study place for a submission in these states (docs.prolific.com, "Submission object").
PROLIFIC_HOLDING = {"RESERVED", "ACTIVE", "AWAITING REVIEW"}


# Why a worker who labelled an item is never given it again, in a top-up HIT or its first one (paper 3.4).
DIFFERENT_PEOPLE = "An item's labels must come from different people, so this work is not for you."


class ClaimRefused(Exception):
    status_code = 403

    def __init__(self, message: str, status_code: int | None = None):
        super().__init__(message)
        if status_code is not None:
            self.status_code = status_code


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


def _crowd_annotator(provider: str, worker_id: str, project) -> Annotator:
    annotator, _ = Annotator.objects.get_or_create(provider=provider, external_id=worker_id)
    status = annotator.status_in(project)
    if status != Annotator.Status.ACTIVE:
        raise ClaimRefused(f"Your worker account is {Annotator.Status(status).label.lower()} for this project.")
    return annotator


def _reserve_hit(hit, annotator: Annotator, project) -> Assignment:
    """A new, unconfirmed assignment on this very HIT (MTurk chose it and holds the place), under the HIT's lock."""
    now = timezone.now()
    Hit.lock(hit.pk)
    if Assignment.objects.confirmed().filter(hit=hit, annotator=annotator,
                                             status=Assignment.Status.SUBMITTED).exists():
        raise ClaimRefused("You have already submitted this HIT.")
    if Hit.objects.filter(pk=hit.pk).filter(labelled_before(hit.project, had_by(annotator))).exists():
        raise ClaimRefused(f"You have already labelled an item of this HIT in another HIT. {DIFFERENT_PEOPLE} "
                           "Please return this HIT and take another.")
    if annotator.provider in KEPT_APART and overlaps_what_they_had(annotator, hit):
        raise ClaimRefused("You have worked on this summary or its key-facts in another HIT of this project; please "
                           "return this HIT and take another.")
    if Assignment.objects.holding_a_place(now, confirmed_only=True).filter(hit=hit).count() \
            >= hit.places:
        raise ClaimRefused("This HIT already has all the annotators it needs.")
    return Assignment.objects.create(hit=hit, annotator=annotator, reserved_at=now, confirmed_at=None,
                                     expires_at=now + timedelta(minutes=project.reservation_minutes))


def _bind(*, assignment, batch, provider, external_assignment_id, external_hit_id, worker_id, submit_to="",
          verified=False):
    try:
        with transaction.atomic():
            claim, created = CrowdClaim.objects.get_or_create(
                provider=provider, external_assignment_id=external_assignment_id,
                defaults={"assignment": assignment, "batch": batch, "external_hit_id": external_hit_id,
                          "worker_id": worker_id, "submit_to": submit_to, "verified": verified})
    except IntegrityError:
        raise ClaimRefused("This assignment is already bound to another provider assignment.") from None
    if claim.worker_id != worker_id or claim.assignment_id != assignment.pk:
        raise ClaimRefused("This assignment belongs to another worker.")
    return claim


def _known(provider: str, external_assignment_id: str, worker_id: str) -> CrowdClaim | None:
    known = (CrowdClaim.objects.select_related("assignment")
             .filter(provider=provider, external_assignment_id=external_assignment_id).first())
    if known is not None and known.worker_id != worker_id:
        raise ClaimRefused("This assignment belongs to another worker.")
    if known is not None and known.assignment.status == Assignment.Status.DISCARDED:
        raise ClaimRefused(f"{'MTurk' if provider == 'mturk' else 'Prolific'} does not know this assignment "
                           "as yours; it was set aside.")
    return known


def mturk_arrive(*, batch: CrowdBatch, assignment_id: str, hit_id: str, worker_id: str, turk_submit_to: str):
    """Returns (assignment, claim, session token) for an accepted MTurk assignment."""
    if not all(WORKER_ID.match(value or "") for value in (worker_id, assignment_id, hit_id)):
        raise ClaimRefused("The parameters MTurk sends are missing or malformed.")
    origin = submit_origin(turk_submit_to)
    crowd_hit = CrowdHit.objects.select_related("hit").filter(batch=batch, external_id=hit_id).first()
    if crowd_hit is None:
        raise ClaimRefused("This HIT was not published by us.")
    known = _known("mturk", assignment_id, worker_id)
    annotator = _crowd_annotator(Annotator.Provider.MTURK, worker_id, batch.project)
    with transaction.atomic():
        assignment = known.assignment if known else _reserve_hit(crowd_hit.hit, annotator, batch.project)
        claim = _bind(assignment=assignment, batch=batch, provider="mturk", external_assignment_id=assignment_id,
                      external_hit_id=hit_id, worker_id=worker_id, submit_to=origin)
    token = sign_session(annotator=annotator, project_id=batch.project_id, provider="mturk", assignment=assignment)
    return assignment, claim, token


def _prolific_session(batch: CrowdBatch, participant_id: str, session_id: str) -> bool:
    """Whether Prolific confirms the session as this participant's, in this study, holding a place: True; False when
    Prolific cannot be reached now. ClaimRefused when Prolific contradicts the claim."""
    try:
        remote = get_provider("prolific").lookup(session_id)
    except ProviderTransientError:
        return False
    if remote is None:
        raise ClaimRefused("Prolific does not know this study session. Open the study from Prolific.")
    if remote.worker_id != participant_id or remote.external_hit_id != batch.external_id:
        raise ClaimRefused("This study session belongs to another participant or another study.")
    if remote.status not in PROLIFIC_HOLDING:
        raise ClaimRefused(f"Prolific says this study session is {remote.status.lower()}; it holds no place in "
                           "the study any more.")
    return True


def prolific_arrive(*, batch: CrowdBatch, participant_id: str, study_id: str, session_id: str):
    if not (PROLIFIC_ID.match(participant_id or "") and study_id == batch.external_id
            and SESSION_ID.match(session_id or "")):
        raise ClaimRefused("This study link is missing Prolific's parameters or names another study.")
    known = _known("prolific", session_id, participant_id)
    # Prolific is asked first: a session it does not know leaves nothing behind, not even an annotator row.
    confirmed = known is not None or _prolific_session(batch, participant_id, session_id)
    annotator = _crowd_annotator(Annotator.Provider.PROLIFIC, participant_id, batch.project)
    if known is not None:
        assignment = known.assignment
    else:
        if needs_screening(annotator, batch.project):
            if not confirmed:
                raise ClaimRefused("Prolific could not confirm your study session just now, and the screening test "
                                   "needs it. Please reload this page in a minute.", status_code=503)
            raise NeedsScreening(sign_session(annotator=annotator, project_id=batch.project_id,
                                              provider="prolific", batch=batch, submission=session_id))
        try:
            with transaction.atomic():
                assignment = reserve_next_hit(annotator, batch.project, batch.task, fresh=True, confirmed=confirmed)
                if assignment is None and only_their_items_left(annotator, batch.project, batch.task):
                    raise ClaimRefused("The HITs this study still offers hold items you have already labelled. "
                                       f"{DIFFERENT_PEOPLE} Please return the study on Prolific.")
                if assignment is None:
                    raise ClaimRefused("Every HIT of this study is taken; please return the study on Prolific.")
                _bind(assignment=assignment, batch=batch, provider="prolific", external_assignment_id=session_id,
                      external_hit_id=study_id, worker_id=participant_id, verified=confirmed)
        except WorkRefused as refusal:
            raise ClaimRefused(str(refusal)) from refusal
    token = sign_session(annotator=annotator, project_id=batch.project_id, provider="prolific",
                         assignment=assignment)
    return assignment, token


def only_their_items_left(annotator: Annotator, project, task: str) -> bool:
    """Whether a HIT of `task` still needs people and is kept from `annotator` only because it shows an item they
    labelled in another HIT (a top-up of their own items): what to tell them instead of "nothing left"."""
    now = timezone.now()
    had = had_by(annotator)
    return (Hit.objects.filter(project=project, task=task)
            .annotate(taken=count_of(Assignment.objects.holding_a_place(now), "hit"))
            .filter(taken__lt=hit_places(project)).exclude(Exists(had.filter(hit=OuterRef("pk"))))
            .filter(labelled_before(project, had)).exists())


def link_next(*, link: PrivateLink, annotator: Annotator):
    """The link holder's next HIT of the link's task, with its session token; (None, None) when none is left."""
    if needs_screening(annotator, link.project):
        raise NeedsScreening(sign_session(annotator=annotator, project_id=link.project_id, provider="link",
                                          link=link))
    try:
        assignment = reserve_next_hit(annotator, link.project, link.task, confirmed=True)
    except WorkRefused as refusal:
        raise ClaimRefused(str(refusal)) from refusal
    if assignment is None and only_their_items_left(annotator, link.project, link.task):
        raise ClaimRefused(f"The HITs still open hold items you have already labelled. {DIFFERENT_PEOPLE} Nothing "
                           "else is waiting for you now; thank you.")
    if assignment is None:
        return None, None
    return assignment, sign_session(annotator=annotator, project_id=link.project_id, provider="link",
                                    assignment=assignment, link=link)


def after_screening(session):
    """The HIT a link holder or Prolific participant goes on to once they passed the screening test, as
    (assignment, session token); (None, None) when the link's work is all done. The arrival is claimed again, with
    every check of the first time (a Prolific session still holding its place, a link still usable); ClaimRefused
    when it cannot be."""
    annotator = session.annotator
    if session.provider == Annotator.Provider.LINK:
        link = PrivateLink.objects.select_related("project").filter(pk=session.link, annotator=annotator).first()
        if link is None or not link.is_usable():
            raise ClaimRefused("This link has expired or was revoked.")
        if (status := annotator.status_in(link.project)) != Annotator.Status.ACTIVE:
            raise ClaimRefused(f"This link's annotator is {Annotator.Status(status).label.lower()}.")
        return link_next(link=link, annotator=annotator)
    if session.provider == Annotator.Provider.PROLIFIC and session.batch and session.submission:
        batch = CrowdBatch.objects.select_related("project").filter(
            public_id=session.batch, provider="prolific", project_id=session.project_id).first()
        if batch is None:
            raise ClaimRefused("This study is no longer published here.")
        return prolific_arrive(batch=batch, participant_id=annotator.external_id, study_id=batch.external_id,
                               session_id=session.submission)
    raise ClaimRefused("Open the study or link again to start.")
