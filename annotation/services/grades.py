"""A manager's override of a grade, and what follows when a submission starts to count: the quality policy's rules
(annotation.quality.policy) applied, and the document's key-fact validation settled as the last submission would."""

from django.db import transaction
from django.utils import timezone

from ..models import Grade, Hit, Task
from ..quality.policy import OverrideRefused, apply_policy
from .hits import create_alignment_hits, settle_keyfact_validation
from .settling import settle_hit
from .topups import queue_topups_if_needed

__all__ = ["OverrideRefused", "grade_override", "settle_after_count_change"]


@transaction.atomic
def grade_override(*, grade: Grade, passed: bool, reason: str, user) -> Grade:
    """A manager overturns (or confirms) the automatic grade; who, when and why are kept, and the decisions follow."""
    reason = (reason or "").strip()
    if not reason:
        raise OverrideRefused("Give a reason for the override; it is kept with the grade.")
    if len(reason) > 2000:
        raise OverrideRefused("The reason is too long (2,000 characters at most).")
    # The HIT first, as the submit service locks it: whether the submission holds a place on the HIT, and whether
    # the document's key-fact validation is complete, change with the grade.
    Hit.lock(Grade.objects.filter(pk=grade.pk).values_list("assignment__hit_id", flat=True).get())
    grade = Grade.objects.select_for_update().select_related("assignment__hit__project").get(pk=grade.pk)
    grade.override_passed, grade.override_reason = passed, reason
    grade.overridden_by, grade.overridden_at = user, timezone.now()
    grade.save(update_fields=["override_passed", "override_reason", "overridden_by", "overridden_at"])
    apply_policy(grade, user=user)
    settle_after_count_change(grade.assignment.hit)
    return grade


def settle_after_count_change(hit: Hit) -> None:
    """A submission that counts now, or no longer (a grade overridden either way, an unconfirmed one the provider
    confirmed): its units are settled again under the redundancy policy (a unit may need a top-up, or no longer),
    and a KV one may complete its document's key-fact validation: settle it and create the KA HITs, as the last
    submission would have (key-fact alignment follows validation). Once KA HITs exist, their key-facts stay. Call
    with the HIT locked."""
    queue_topups_if_needed(hit.project, settle_hit(hit))
    if hit.task != Task.KEYFACT_VALIDATION:
        return
    if Hit.objects.filter(document_id=hit.document_id, task=Task.KEYFACT_ALIGNMENT).exists():
        return
    if settle_keyfact_validation(hit.document) is not None:
        create_alignment_hits(hit.document)
