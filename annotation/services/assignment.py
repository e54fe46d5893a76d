"""Handing out HITs: reservations, expiry, returns and submissions (paper 3.4: N independent annotators per unit).

Every change that can add an annotator to a HIT (a new reservation, the renewal of an expired one) runs while the
HIT's row is locked, so the count of assignments holding a place (submitted and counted, or reserved and not
expired) never exceeds the project's N, however many annotators ask at once. On PostgreSQL, `reserve_next_hit` skips
HITs that another transaction holds (SKIP LOCKED), so concurrent annotators never queue behind each other; SQLite
serialises writers anyway.

A submission that failed its attention checks keeps its labels but gives its place back (Assignment.holding_a_place):
the HIT is offered again, to annotators who have not had it, until N of its submissions count. Grading runs inside
the submit transaction, under the HIT's lock, so a freed place is visible only once the grade is stored.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from corpus.internals import MARKER_ID, CompiledQuery
from corpus.models import Project

from ..models import Annotator, Assignment, Hit, Task, Unit
from ..selectors import available_hits, current_assignment
from ..wording import QUESTION_NAMES, describe_unit
from .hits import create_alignment_hits, settle_keyfact_validation
from .settling import settle_hit
from .topups import queue_topups_if_needed


class WorkRefused(Exception):
    """The request cannot be honoured as it stands; the message says why, in words an annotator understands."""

    status_code = 409

    def __init__(self, message: str, status_code: int | None = None):
        super().__init__(message)
        if status_code is not None:
            self.status_code = status_code


class AlreadySubmitted(WorkRefused):
    def __init__(self):
        super().__init__("This HIT is already submitted; answers can no longer change.")


class MissingAnswers(WorkRefused):
    status_code = 400

    def __init__(self, missing: list[tuple[Unit, list[str]]]):
        self.missing = missing
        super().__init__(f"{len(missing)} item(s) still need an answer: "
                         + "; ".join(f"{describe_unit(unit)}: {', '.join(QUESTION_NAMES[f] for f in fields)}"
                                     for unit, fields in missing))


def reserve_next_hit(annotator: Annotator, project: Project, task: str, *, confirmed: bool,
                     fresh: bool = False) -> Assignment | None:
    """The annotator's open reservation of `task`, or a new one on the first HIT that still needs people.

    None when nothing is left. An annotator holds at most one open reservation per task and never gets a HIT they
    submitted or returned. `fresh`: a new claim from a crowd provider (a Prolific session) reserves, so no reservation
    of another claim is reused or renewed. `confirmed` says whether the caller's identity is confirmed (an account,
    a private link: yes; a crowd claim: once its provider says so); it has no default, so that work reserved through
    an unconfirmed claim is unconfirmed wherever it is reserved. A private link's worker reserves its link's task
    only.
    """
    if task not in Task.values:
        raise ValueError(f"Unknown task {task!r}: use one of {', '.join(Task.values)}")
    if annotator.provider == Annotator.Provider.LINK:
        link = getattr(annotator, "private_link", None)
        if link is None or link.project_id != project.pk or link.task != task:
            raise WorkRefused("This private link is for other work: it reserves only its own task's HITs.", 403)
    now = timezone.now()
    with transaction.atomic():
        # One request at a time per annotator: a double click must not reserve two HITs.
        Annotator.objects.select_for_update().filter(pk=annotator.pk).first()
        # --- quality control hook: annotators paused, blocked or unqualified in this project get no HIT.
        from ..quality.qualification import reservation_refusal
        if refusal := reservation_refusal(annotator, project):
            raise WorkRefused(refusal)
        # --- end of hook
        release_expired(annotator=annotator, now=now)
        if not fresh and (current := current_assignment(annotator, project, task, now)):
            return current
        tried: list[int] = []
        while True:
            hit = (available_hits(annotator, project, task, now).exclude(pk__in=tried)
                   # Top-ups first: they settle units whose other labels are in, before new units are begun.
                   .order_by("overlaps", "-round", "position", "pk")
                   .select_for_update(skip_locked=True, of=("self",))
                   .first())
            if hit is None:
                return None
            # The list above was read before the lock: count again, now that nobody else can add to this HIT.
            if Assignment.objects.holding_a_place(now).filter(hit=hit).count() < hit.places:
                return _take_place(hit, annotator, project, now, fresh=fresh, confirmed=confirmed)
            tried.append(hit.pk)


def _take_place(hit: Hit, annotator: Annotator, project: Project, now, *, fresh: bool = False,
                confirmed: bool = True) -> Assignment:
    expires_at = now + timedelta(minutes=project.reservation_minutes)
    own = None if fresh else (Assignment.objects.filter(hit=hit, annotator=annotator, confirmed_at__isnull=False)
                              .exclude(status=Assignment.Status.DISCARDED).order_by("-reserved_at", "-pk").first())
    if own is None:
        return Assignment.objects.create(hit=hit, annotator=annotator, reserved_at=now, expires_at=expires_at,
                                         confirmed_at=now if confirmed else None)
    # Their own expired reservation: renewed with its answers.
    own.status, own.reserved_at, own.expires_at = Assignment.Status.RESERVED, now, expires_at
    own.save(update_fields=["status", "reserved_at", "expires_at"])
    return own


def release_expired(*, annotator: Annotator | None = None, project: Project | None = None, now=None) -> int:
    """Mark reservations past their time as expired; their places return to the pool. Returns how many."""
    queryset = Assignment.objects.filter(status=Assignment.Status.RESERVED, expires_at__lte=now or timezone.now())
    if annotator is not None:
        queryset = queryset.filter(annotator=annotator)
    if project is not None:
        queryset = queryset.filter(hit__project=project)
    return queryset.update(status=Assignment.Status.EXPIRED)


class ReservationLapsed(Exception):
    """Internal: the reservation must be renewed (which needs the HIT's lock, taken first) before writing."""


# Taken by every saved answer (corpus.internals).
_LOCKED_ASSIGNMENT = CompiledQuery(lambda pk: Assignment.objects.select_for_update().filter(pk=pk).order_by(),
                                   pk=MARKER_ID)


def lock_open_assignment(assignment: Assignment, *, hit_locked: bool = False) -> Assignment:
    """Lock the assignment for a write; it must be open, or lapsed and renewable while a place is still free.

    Call inside a transaction. Locks are always taken HIT first, then assignment: the common case (an open
    reservation) needs only the assignment's lock; a lapsed one raises ReservationLapsed unless the caller holds
    the HIT's lock (`renew_reservation` does). Raises WorkRefused when the assignment is submitted or returned, or
    when it lapsed and its place went to somebody else.
    """
    found = _LOCKED_ASSIGNMENT(pk=assignment.pk)
    if not found:
        raise Assignment.DoesNotExist("Assignment matching query does not exist.")
    locked = found[0]
    locked.hit = assignment.hit  # loaded by the caller; what it says about the HIT does not change
    if locked.status == Assignment.Status.SUBMITTED:
        raise AlreadySubmitted()
    if locked.status == Assignment.Status.RETURNED:
        raise WorkRefused("You returned this HIT; it can no longer be changed.")
    if locked.status == Assignment.Status.DISCARDED:
        raise WorkRefused("This HIT was set aside: the provider does not know it as yours.")
    now = timezone.now()
    if locked.status == Assignment.Status.EXPIRED or locked.expires_at <= now:
        if not hit_locked:
            raise ReservationLapsed()
        project = locked.hit.project  # For the reservation time below.
        others = (Assignment.objects.holding_a_place(now).filter(hit_id=locked.hit_id).exclude(pk=locked.pk)
                  .count())
        if others >= locked.hit.places:
            raise WorkRefused("Your reservation of this HIT expired and it went to another annotator.")
        locked.status = Assignment.Status.RESERVED
        locked.expires_at = now + timedelta(minutes=project.reservation_minutes)
        locked.save(update_fields=["status", "expires_at"])
    return locked


def renew_reservation(assignment: Assignment) -> Assignment:
    """Renew a lapsed reservation if its place is still free (WorkRefused otherwise)."""
    with transaction.atomic():
        Hit.lock(assignment.hit_id)
        return lock_open_assignment(assignment, hit_locked=True)


@dataclass
class SubmitResult:
    assignment: Assignment
    already_submitted: bool = False
    alignment_hits_created: int = 0


def submit_assignment(*, assignment: Assignment, submission_key: str = "") -> SubmitResult:
    """Submit every answer of the HIT at once; a resent submit changes nothing; missing answers refuse it.

    The last KV submission of a document settles its key-facts and creates the document's KA HITs (KA work exists
    only once KV is finished).
    """
    with transaction.atomic():
        # The HIT's lock also serialises the submissions of one HIT: the last KV submission is seen as the last.
        Hit.lock(assignment.hit_id)
        try:
            locked = lock_open_assignment(assignment, hit_locked=True)
        except AlreadySubmitted:
            return SubmitResult(assignment=Assignment.objects.get(pk=assignment.pk), already_submitted=True)
        hit = locked.hit
        units = list(hit.units.order_by("position"))
        labels = {label.unit_id: label for label in locked.labels.all()}
        missing = []
        for unit in units:
            label = labels.get(unit.pk)
            fields = label.missing(unit, hit) if label else unit.question_fields(hit)
            if fields:
                missing.append((unit, fields))
        if missing:
            raise MissingAnswers(missing)
        locked.status, locked.submitted_at = Assignment.Status.SUBMITTED, timezone.now()
        locked.submission_key = submission_key[:64]
        # Every unit asks a question, so a submission with nothing missing has a label on each.
        locked.labelled_every_unit = all(unit.pk in labels for unit in units)
        locked.save(update_fields=["status", "submitted_at", "submission_key", "labelled_every_unit"])
        # Quality control: grade the attention checks and write the approve/reject/bonus/block decisions, under the
        # HIT's lock, so that a place freed by a failed submission is visible only once the grade is stored.
        from ..quality.policy import grade_and_apply_policy
        grade_and_apply_policy(locked)
        # The redundancy policy: whether the units this submission labelled are settled or need a top-up.
        queue_topups_if_needed(hit.project, settle_hit(hit))
        result = SubmitResult(assignment=locked)
        if hit.task == Task.KEYFACT_VALIDATION and settle_keyfact_validation(hit.document) is not None:
            result.alignment_hits_created, _ = create_alignment_hits(hit.document)
        return result


def return_assignment(*, assignment: Assignment) -> Assignment:
    """The annotator gives the HIT back: its place returns to the pool and they will not be offered it again."""
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if locked.status == Assignment.Status.SUBMITTED:
            raise WorkRefused("This HIT is already submitted and cannot be returned.")
        if locked.status != Assignment.Status.RETURNED:
            locked.status = Assignment.Status.RETURNED
            locked.save(update_fields=["status"])
        return locked
