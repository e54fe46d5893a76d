"""What follows a grade (BRIEF steps 7-8; paper G.2-G.3): approve or reject, bonuses, pausing and blocking.

Decisions are rows with deterministic idempotency keys, executed by the crowd provider's outbox: running the
policy twice writes nothing new. Keys:
  approve:<assignment public_id>        reject:<assignment public_id>
  bonus:<annotator public_id>:<project slug>:<n>   (the n-th run of `bonus_every_hits` consecutive good HITs)
  block:<annotator public_id>:<project slug>        (the first block; the n-th, after n-1 unblocks, ends in :<n>)
  unblock:<annotator public_id>:<project slug>:<n>  (a manager reactivates the worker: lifts the n-th block)
  place:<assignment public_id>          (a failed crowd submission: one more place for its HIT on the provider)

Who gets what. Crowd workers (MTurk, Prolific) are paid through their platform: they get approve/reject/bonus
decisions, and a block decision. In-house annotators (accounts, private links) are not paid through a provider, so
they get no approve/reject/bonus decisions; they are still paused and blocked here, by their status, which stops
new reservations (annotation.permissions and the reservation service read it). A failed submission of a crowd
worker is rejected when `Project.reject_failed` (the default), else approved anyway; its labels never count.
Pausing: pass rate below `pause_below_pass_rate` over the last `pass_rate_window` graded submissions (only once
that many exist). Blocking: `block_after_failures` failed submissions in the project. A manager reactivates
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

from ..models import Annotator, Assignment, Decision, Grade, Hit, Project, Task
from .grading import grade_assignment

PAID_PROVIDERS = (Annotator.Provider.MTURK, Annotator.Provider.PROLIFIC)


def is_paid_through_provider(annotator: Annotator) -> bool:
    return annotator.provider in PAID_PROVIDERS


def _ensure(key: str, **fields) -> Decision:
    decision, created = Decision.objects.get_or_create(idempotency_key=key, defaults=fields)
    if not created and decision.status == Decision.Status.CANCELLED:
        decision.status = Decision.Status.PENDING
        decision.save(update_fields=["status"])
    return decision


def _cancel(key: str) -> int:
    """Withdraw a decision the provider has not carried out yet (a manager's override changed the grade)."""
    return Decision.objects.filter(idempotency_key=key, status=Decision.Status.PENDING).update(
        status=Decision.Status.CANCELLED)


def grade_history(annotator: Annotator, project, *, since=None) -> list[bool]:
    """Whether each graded submission of `annotator` in `project` counts, oldest first; only those submitted after
    `since` when given."""
    rows = Grade.objects.filter(assignment__annotator=annotator, assignment__hit__project=project)
    if since is not None:
        rows = rows.filter(assignment__submitted_at__gt=since)
    rows = rows.order_by("assignment__submitted_at", "pk").values_list("passed", "override_passed")
    return [passed if override is None else override for passed, override in rows]


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


def bonuses_earned(history: list[bool], every: int) -> int:
    """Runs of `every` consecutive good submissions (paper G.2: $25 per 500); a failure restarts the run."""
    if every <= 0:
        return 0
    earned = streak = 0
    for counts in history:
        streak = streak + 1 if counts else 0
        if streak and streak % every == 0:
            earned += 1
    return earned


@transaction.atomic
def apply_policy(grade: Grade, *, user=None) -> list[Decision]:
    """Write the decisions `grade` calls for and update the annotator's status; idempotent."""
    assignment: Assignment = grade.assignment
    annotator = Annotator.objects.select_for_update().get(pk=assignment.annotator_id)
    project = assignment.hit.project
    decisions: list[Decision] = []
    common = {"project": project, "annotator": annotator, "created_by": user}
    if is_paid_through_provider(annotator):
        approve, reject = f"approve:{assignment.public_id}", f"reject:{assignment.public_id}"
        if grade.counts or not project.reject_failed:
            _cancel(reject)
            decisions.append(_ensure(approve, kind=Decision.Kind.APPROVE, assignment=assignment, **common))
        else:
            _cancel(approve)
            decisions.append(_ensure(reject, kind=Decision.Kind.REJECT, assignment=assignment,
                                     reason=grade.reason, **common))
        place = f"place:{assignment.public_id}"
        if grade.counts:
            _cancel(place)
        else:
            decisions.append(_ensure(place, kind=Decision.Kind.EXTEND, assignment=assignment,
                                     reason="The submission failed its attention checks; its HIT needs another "
                                            "annotator.", **common))
    history = grade_history(annotator, project)
    if is_paid_through_provider(annotator) and project.bonus_usd > 0:
        for n in range(1, bonuses_earned(history, project.bonus_every_hits) + 1):
            decisions.append(_ensure(
                f"bonus:{annotator.public_id}:{project.slug}:{n}", kind=Decision.Kind.BONUS,
                amount_usd=project.bonus_usd,
                reason=f"Thank you: {project.bonus_every_hits} consecutive HITs of good quality.", **common))
    # After an unblock, the worker starts afresh: only later submissions count towards a pause or a new block.
    last_unblock = _unblocks(annotator, project).order_by("-created", "-pk").first()
    if last_unblock is not None:
        history = grade_history(annotator, project, since=last_unblock.created)
    failures = history.count(False)
    window = history[-project.pass_rate_window:]
    if failures >= project.block_after_failures:
        if annotator.status != Annotator.Status.BLOCKED:
            annotator.status = Annotator.Status.BLOCKED
            annotator.save(update_fields=["status"])
        if is_paid_through_provider(annotator):
            decisions.append(_ensure(
                block_key(annotator, project, block_number(annotator, project)), kind=Decision.Kind.BLOCK,
                reason=f"{failures} submissions failed their attention checks.", **common))
    elif (annotator.status == Annotator.Status.ACTIVE and len(window) >= project.pass_rate_window
          and sum(window) / len(window) < project.pause_below_pass_rate):
        annotator.status = Annotator.Status.PAUSED
        annotator.save(update_fields=["status"])
    return decisions


def grade_and_apply_policy(assignment: Assignment) -> Grade:
    """The submit service's hook: grade a just-submitted assignment and act on the grade."""
    grade = grade_assignment(assignment)
    apply_policy(grade)
    return grade


class OverrideRefused(Exception):
    status_code = 400


@transaction.atomic
def grade_override(*, grade: Grade, passed: bool, reason: str, user) -> Grade:
    """A manager overturns (or confirms) the automatic grade; who, when and why are kept, and the decisions follow."""
    reason = (reason or "").strip()
    if not reason:
        raise OverrideRefused("Give a reason for the override; it is kept with the grade.")
    if len(reason) > 2000:
        raise OverrideRefused("The reason is too long (2,000 characters at most).")
    from ..services.assignment import lock_hit

    # The HIT first, as the submit service locks it: whether the submission holds a place on the HIT, and whether
    # the document's key-fact validation is complete, change with the grade.
    lock_hit(Grade.objects.filter(pk=grade.pk).values_list("assignment__hit_id", flat=True).get())
    grade = Grade.objects.select_for_update().select_related("assignment__hit__project").get(pk=grade.pk)
    grade.override_passed, grade.override_reason = passed, reason
    grade.overridden_by, grade.overridden_at = user, timezone.now()
    grade.save(update_fields=["override_passed", "override_reason", "overridden_by", "overridden_at"])
    apply_policy(grade, user=user)
    if grade.assignment.hit.task == Task.KEYFACT_VALIDATION:
        _settle_after_override(grade.assignment.hit)
    return grade


def _settle_after_override(hit: Hit) -> None:
    """A failed KV submission overridden to pass may complete its document's key-fact validation: settle it and
    create the KA HITs, as the last submission would have (BRIEF step 6). Once KA HITs exist, their key-facts stay."""
    from ..services.hits import create_alignment_hits, settle_keyfact_validation

    if Hit.objects.filter(document_id=hit.document_id, task=Task.KEYFACT_ALIGNMENT).exists():
        return
    if settle_keyfact_validation(hit.document) is not None:
        create_alignment_hits(hit.document)


@transaction.atomic
def annotator_set_status(*, annotator: Annotator, status: str, project: Project | None = None, user=None,
                         reason: str = "") -> Annotator:
    """A manager pauses, blocks or reactivates an annotator.

    Reactivating a crowd worker who has a block decision in `project` (the policy's or a manager's) not lifted yet
    writes an unblock decision, with who and why; the outbox lifts the block on the provider once the block itself
    is carried out (annotation/crowd/outbox.py). Reactivating twice writes it once. Any other reactivation from
    paused or blocked (in-house annotators, a paused crowd worker) is recorded as an unblock carried out here, with
    no provider call. Either way the annotator starts afresh: only later submissions count towards the next pause
    or block, or the old failures would block them again at their next submission.
    """
    if status not in Annotator.Status.values:
        raise OverrideRefused(f"Unknown status {status!r}.")
    reason = (reason or "").strip()
    if len(reason) > 2000:
        raise OverrideRefused("The reason is too long (2,000 characters at most).")
    # The annotator's lock serialises this with the policy, which reads the unblocks to number the next block.
    locked = Annotator.objects.select_for_update().get(pk=annotator.pk)
    previous = locked.status
    Annotator.objects.filter(pk=annotator.pk).update(status=status)
    annotator.status = locked.status = status
    if status != Annotator.Status.ACTIVE or project is None:
        return annotator
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
    return annotator
