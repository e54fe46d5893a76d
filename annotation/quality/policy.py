"""What follows a grade (paper G.2-G.3): approve or reject, bonuses, pausing and blocking.

Decisions are rows with deterministic idempotency keys, executed by the crowd provider's outbox: running the
policy twice writes nothing new. Keys:
  approve:<assignment public_id>        reject:<assignment public_id>
  bonus:<annotator public_id>:<project slug>:<n>   (the n-th run of `bonus_every_hits` consecutive good HITs)
  block:<annotator public_id>:<project slug>        (the first block; the n-th, after n-1 unblocks, ends in :<n>)
  unblock:<annotator public_id>:<project slug>:<n>  (a manager reactivates the worker: lifts the n-th block)
  place:<assignment public_id>          (a failed crowd submission: one more place for its HIT on the provider)

Confirmed submissions only. Grading runs at submit, but the policy acts only on submissions whose identity is
confirmed (`Assignment.confirmed_at`): an MTurk or Prolific worker id is a claim until the provider's API says the
submission is theirs (annotation/crowd/sync.py), so a forged arrival can neither get a worker rejected, paused or
blocked, nor earn a bonus, nor count. Sync runs the policy when it confirms a submission. Every decision cites the
confirmed submissions it rests on (`Decision.rests_on`), and so does a pause or block (`ProjectAnnotator`).

Who gets what. Crowd workers (MTurk, Prolific) are paid through their platform: they get approve/reject/bonus
decisions, and a block decision. In-house annotators (accounts, private links) are not paid through a provider, so
they get no approve/reject/bonus decisions; they are still paused and blocked here, by their status in the project,
which stops new reservations there (annotation.permissions and the reservation service read it). Statuses are per
project: a pause or block in one project leaves the annotator's standing in every other project as it was. A failed
submission of a crowd worker is rejected when `Project.reject_failed` (the default), else approved anyway; its labels
never count.
Pausing: pass rate below `pause_below_pass_rate` over the last `pass_rate_window` graded submissions (only once
that many exist). Blocking: `block_after_failures` failed submissions in the project. A project's manager reactivates
(`annotator_set_status`); for a crowd worker whose block was decided, that writes an unblock decision, and only the
submissions after it count towards the next pause or block, which gets a key of its own and is carried out again.

Places. A failed submission gives its place on the HIT back here (AssignmentQuerySet.holding_a_place), but MTurk and
Prolific published the HIT with exactly N places and a failed submission, rejected or approved anyway, does not reopen
one there (a Prolific rejection does: the outbox records that). So a failed crowd submission also gets an "add a
place" decision; an override to pass withdraws it while it is pending. One already carried out stays: the HIT may
then end with one submission more than N, which costs one more reward if it is approved. In-house annotators need
nothing on a provider: the local re-offer is all there is.
"""

from django.db import transaction
from django.utils import timezone

from corpus.models import Project

from ..models import Annotator, Assignment, Decision, Grade, ProjectAnnotator
from .grading import grade_assignment

PAID_PROVIDERS = (Annotator.Provider.MTURK, Annotator.Provider.PROLIFIC)


def is_paid_through_provider(annotator: Annotator) -> bool:
    return annotator.provider in PAID_PROVIDERS


def _ensure(key: str, *, rests_on=None, **fields) -> Decision:
    decision, created = Decision.objects.get_or_create(idempotency_key=key, defaults=fields)
    revived = not created and decision.status == Decision.Status.CANCELLED
    if revived:
        decision.status = Decision.Status.PENDING
        decision.save(update_fields=["status"])
    if rests_on is not None and (created or revived or not decision.rests_on.exists()):
        decision.rests_on.set(list(rests_on))
    return decision


def _cancel(key: str) -> int:
    """Withdraw a decision the provider has not carried out yet (a manager's override changed the grade)."""
    return Decision.objects.filter(idempotency_key=key, status=Decision.Status.PENDING).update(
        status=Decision.Status.CANCELLED)


def graded_submissions(annotator: Annotator, project, *, since=None) -> list[tuple[int, bool]]:
    """(assignment id, whether its grade counts) for each confirmed, graded submission of `annotator` in `project`,
    oldest first; only those submitted after `since` when given."""
    rows = Grade.objects.filter(assignment__annotator=annotator, assignment__hit__project=project,
                                assignment__status=Assignment.Status.SUBMITTED,
                                assignment__confirmed_at__isnull=False)
    if since is not None:
        rows = rows.filter(assignment__submitted_at__gt=since)
    rows = rows.order_by("assignment__submitted_at", "pk").values_list("assignment_id", "passed", "override_passed")
    return [(pk, passed if override is None else override) for pk, passed, override in rows]


def grade_history(annotator: Annotator, project, *, since=None) -> list[bool]:
    """Whether each confirmed, graded submission of `annotator` in `project` counts, oldest first."""
    return [counts for _, counts in graded_submissions(annotator, project, since=since)]


def _unblocks(annotator: Annotator, project):
    """The unblock decisions of `annotator` in `project` (a manager's reactivation, or a manual unblock)."""
    return Decision.objects.filter(annotator=annotator, project=project, kind=Decision.Kind.UNBLOCK).exclude(
        status=Decision.Status.CANCELLED)


def block_number(annotator: Annotator, project) -> int:
    """Which block of `annotator` in `project` the next (or current) one is: 1, and one more after each unblock."""
    return 1 + _unblocks(annotator, project).count()


def block_key(annotator: Annotator, project, number: int) -> str:
    base = f"block:{annotator.public_id}:{project.slug}"
    return base if number == 1 else f"{base}:{number}"


def unblock_key(annotator: Annotator, project, number: int) -> str:
    return f"unblock:{annotator.public_id}:{project.slug}:{number}"


def bonus_runs(history: list[tuple[int, bool]], every: int) -> list[list[int]]:
    """The submissions of each run of `every` consecutive good ones (paper G.2: $25 per 500); a failure restarts
    the run."""
    if every <= 0:
        return []
    runs, streak = [], []
    for pk, counts in history:
        streak = [*streak, pk] if counts else []
        if streak and len(streak) % every == 0:
            runs.append(streak[-every:])
    return runs


def bonuses_earned(history: list[bool], every: int) -> int:
    return len(bonus_runs(list(enumerate(history)), every))


@transaction.atomic
def apply_policy(grade: Grade, *, user=None) -> list[Decision]:
    """Write the decisions `grade` calls for and update the annotator's status in the project; idempotent.

    Nothing at all while the submission is not confirmed (see the module's docstring)."""
    assignment: Assignment = grade.assignment
    if assignment.confirmed_at is None or assignment.status != Assignment.Status.SUBMITTED:
        return []
    annotator = Annotator.objects.select_for_update().get(pk=assignment.annotator_id)
    project = assignment.hit.project
    standing = ProjectAnnotator.locked(annotator, project)
    decisions: list[Decision] = []
    common = {"project": project, "annotator": annotator, "created_by": user}
    if is_paid_through_provider(annotator):
        approve, reject = f"approve:{assignment.public_id}", f"reject:{assignment.public_id}"
        if grade.counts or not project.reject_failed:
            _cancel(reject)
            decisions.append(_ensure(approve, kind=Decision.Kind.APPROVE, assignment=assignment,
                                     rests_on=[assignment], **common))
        else:
            _cancel(approve)
            decisions.append(_ensure(reject, kind=Decision.Kind.REJECT, assignment=assignment,
                                     reason=grade.reason, rests_on=[assignment], **common))
        place = f"place:{assignment.public_id}"
        if grade.counts:
            _cancel(place)
        else:
            decisions.append(_ensure(place, kind=Decision.Kind.ADD_PLACE, assignment=assignment,
                                     reason="The submission failed its attention checks; its HIT needs another "
                                            "annotator.", rests_on=[assignment], **common))
    history = graded_submissions(annotator, project)
    if is_paid_through_provider(annotator) and project.bonus_usd > 0:
        for n, run in enumerate(bonus_runs(history, project.bonus_every_hits), start=1):
            decisions.append(_ensure(
                f"bonus:{annotator.public_id}:{project.slug}:{n}", kind=Decision.Kind.BONUS,
                amount_usd=project.bonus_usd, rests_on=run,
                reason=f"Thank you: {project.bonus_every_hits} consecutive HITs of good quality.", **common))
    # After an unblock, the worker starts afresh: only later submissions count towards a pause or a new block.
    last_unblock = _unblocks(annotator, project).order_by("-created", "-pk").first()
    if last_unblock is not None:
        history = graded_submissions(annotator, project, since=last_unblock.created)
    failures = [pk for pk, counts in history if not counts]
    window = history[-project.pass_rate_window:]
    if len(failures) >= project.block_after_failures:
        reason = f"{len(failures)} submissions failed their attention checks."
        if standing.status != Annotator.Status.BLOCKED:
            standing.set_status(Annotator.Status.BLOCKED, reason=reason, rests_on=failures)
        if is_paid_through_provider(annotator):
            decisions.append(_ensure(
                block_key(annotator, project, block_number(annotator, project)), kind=Decision.Kind.BLOCK,
                reason=reason, rests_on=failures, **common))
    elif standing.status == Annotator.Status.ACTIVE and len(window) >= project.pass_rate_window:
        passed = sum(counts for _, counts in window)
        if passed / len(window) < project.pause_below_pass_rate:
            standing.set_status(Annotator.Status.PAUSED, rests_on=[pk for pk, _ in window],
                                reason=f"{passed} of the last {len(window)} submissions passed their checks.")
    return decisions


def grade_and_apply_policy(assignment: Assignment) -> Grade:
    """Grade a just-submitted assignment and act on the grade; the submit service calls it inside its transaction."""
    grade = grade_assignment(assignment)
    apply_policy(grade)
    return grade


class OverrideRefused(Exception):
    status_code = 400


@transaction.atomic
def annotator_set_status(*, annotator: Annotator, project: Project, status: str, user=None,
                         reason: str = "") -> ProjectAnnotator:
    """A manager of `project` pauses, blocks or reactivates an annotator there, and nowhere else.

    Reactivating a crowd worker who has a block decision in `project` (the policy's or a manager's) not lifted yet
    writes an unblock decision, with who and why; the outbox lifts the block on the provider once the block itself
    is carried out (annotation/crowd/outbox.py). Reactivating twice writes it once. Any other reactivation from
    paused or blocked (in-house annotators, a paused crowd worker) is recorded as an unblock carried out here, with
    no provider call. Either way the annotator starts afresh: only later submissions count towards the next pause
    or block, or the old failures would block them again at their next submission.
    """
    if status not in Annotator.Status.values:
        labels = [label.lower() for label in Annotator.Status.labels]
        raise OverrideRefused(f"Choose a status: {', '.join(labels[:-1])} or {labels[-1]}.")
    reason = (reason or "").strip()
    if len(reason) > 2000:
        raise OverrideRefused("The reason is too long (2,000 characters at most).")
    # The annotator's lock serialises this with the policy, which reads the unblocks to number the next block.
    locked = Annotator.objects.select_for_update().get(pk=annotator.pk)
    standing = ProjectAnnotator.locked(locked, project)
    previous = standing.status
    standing.set_status(status, reason=reason or "Set by a project manager.", user=user)
    if status != Annotator.Status.ACTIVE:
        return standing
    common = dict(kind=Decision.Kind.UNBLOCK, project=project, annotator=locked, created_by=user,
                  reason=reason or "Reactivated by a project manager.")
    blocks = Decision.objects.filter(annotator=locked, project=project, kind=Decision.Kind.BLOCK).exclude(
        status=Decision.Status.CANCELLED)
    last_unblock = _unblocks(locked, project).order_by("-created", "-pk").first()
    if last_unblock is not None:
        blocks = blocks.filter(pk__gt=last_unblock.pk)
    if is_paid_through_provider(locked) and blocks.exists():
        _ensure(unblock_key(locked, project, block_number(locked, project)), **common)
    elif previous != Annotator.Status.ACTIVE:
        _ensure(unblock_key(locked, project, block_number(locked, project)), **common, status=Decision.Status.DONE,
                executed_at=timezone.now(), provider_response={"local": True, "reactivated_from": previous})
    return standing
