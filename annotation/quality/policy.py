"""What follows a grade (BRIEF steps 7-8; paper G.2-G.3): approve or reject, bonuses, pausing and blocking.

Decisions are rows with deterministic idempotency keys, executed by the crowd provider's outbox: running the
policy twice writes nothing new. Keys:
  approve:<assignment public_id>        reject:<assignment public_id>
  bonus:<annotator public_id>:<project slug>:<n>   (the n-th run of `bonus_every_hits` consecutive good HITs)
  block:<annotator public_id>:<project slug>

Who gets what. Crowd workers (MTurk, Prolific) are paid through their platform: they get approve/reject/bonus
decisions, and a block decision. In-house annotators (accounts, private links) are not paid through a provider, so
they get no approve/reject/bonus decisions; they are still paused and blocked here, by their status, which stops
new reservations (annotation.permissions and the reservation service read it). A failed submission of a crowd
worker is rejected when `Project.reject_failed` (the default), else approved anyway; its labels never count.
Pausing: pass rate below `pause_below_pass_rate` over the last `pass_rate_window` graded submissions (only once
that many exist). Blocking: `block_after_failures` failed submissions in the project. A manager reactivates.
"""

from django.db import transaction
from django.utils import timezone

from ..models import Annotator, Assignment, Decision, Grade
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


def grade_history(annotator: Annotator, project) -> list[bool]:
    """Whether each graded submission of `annotator` in `project` counts, oldest first."""
    rows = (Grade.objects.filter(assignment__annotator=annotator, assignment__hit__project=project)
            .order_by("assignment__submitted_at", "pk").values_list("passed", "override_passed"))
    return [passed if override is None else override for passed, override in rows]


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
    history = grade_history(annotator, project)
    if is_paid_through_provider(annotator) and project.bonus_usd > 0:
        for n in range(1, bonuses_earned(history, project.bonus_every_hits) + 1):
            decisions.append(_ensure(
                f"bonus:{annotator.public_id}:{project.slug}:{n}", kind=Decision.Kind.BONUS,
                amount_usd=project.bonus_usd,
                reason=f"Thank you: {project.bonus_every_hits} consecutive HITs of good quality.", **common))
    failures = history.count(False)
    window = history[-project.pass_rate_window:]
    if failures >= project.block_after_failures:
        if annotator.status != Annotator.Status.BLOCKED:
            annotator.status = Annotator.Status.BLOCKED
            annotator.save(update_fields=["status"])
        if is_paid_through_provider(annotator):
            decisions.append(_ensure(
                f"block:{annotator.public_id}:{project.slug}", kind=Decision.Kind.BLOCK,
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
    grade = Grade.objects.select_for_update().select_related("assignment__hit__project").get(pk=grade.pk)
    grade.override_passed, grade.override_reason = passed, reason
    grade.overridden_by, grade.overridden_at = user, timezone.now()
    grade.save(update_fields=["override_passed", "override_reason", "overridden_by", "overridden_at"])
    apply_policy(grade, user=user)
    return grade


@transaction.atomic
def annotator_set_status(*, annotator: Annotator, status: str) -> Annotator:
    """A manager pauses, blocks or reactivates an annotator (a provider-side unblock is the crowd engineer's)."""
    if status not in Annotator.Status.values:
        raise OverrideRefused(f"Unknown status {status!r}.")
    Annotator.objects.filter(pk=annotator.pk).update(status=status)
    annotator.status = status
    return annotator
