"""Settling units under the project's redundancy policy (annotation.redundancy): each real unit of the first round has
a `UnitState`, written from its counted labels (its own and its top-ups') whenever one of them starts or stops
counting: a submission, a provider's confirmation, a discard, a manager's grade override.

The state is derived, never accumulated: the service reads the counted labels again under the state's row lock, so
two submissions that settle the same unit at once are written one after the other, the second from both labels, and
a later rejection or discard takes back what it took, by the same read. Lock order: the HIT (the caller's), then the
states in unit order.
"""

from collections import defaultdict
from collections.abc import Iterable

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from ..models import AttentionCheck, Hit, Label, Unit, UnitState
from ..models.assignment import counted_submission_q
from ..redundancy import Verdict, redundancy_of

# The answer each task's policy reads (BRIEF, protocol 6): FV has an error, KV useful, KA aligned.
DECIDING = {"fv": "has_error", "kv": "useful", "ka": "aligned"}


def first_round_units(units) -> "list[int]":
    """The first-round units (`Unit.origin`, or the unit itself) behind `units`, checks left out."""
    real = units.exclude(Exists(AttentionCheck.objects.filter(unit_id=OuterRef("pk"))))
    return sorted(set(real.annotate(root=Coalesce("origin_id", "pk")).values_list("root", flat=True)))


def settle_hit(hit: Hit) -> list[UnitState]:
    """Settle the units a HIT's labels belong to; call inside the transaction that changed what counts."""
    return settle_units(first_round_units(Unit.objects.filter(hit=hit)))


@transaction.atomic
def settle_units(unit_ids: Iterable[int]) -> list[UnitState]:
    """Write the state of these first-round units from their counted labels, under their rows' locks."""
    unit_ids = sorted(set(unit_ids))
    if not unit_ids:
        return []
    units = {unit.pk: unit for unit in Unit.objects.filter(pk__in=unit_ids, origin__isnull=True)
             .select_related("hit__project")}
    UnitState.objects.bulk_create(
        [UnitState(unit_id=pk, project_id=unit.hit.project_id, task=unit.task) for pk, unit in units.items()],
        ignore_conflicts=True)
    states = list(UnitState.objects.select_for_update().filter(unit_id__in=units).order_by("unit_id"))
    # After the lock: what counts now, whoever committed it while this transaction waited.
    answers: dict[int, list[tuple[bool, int]]] = defaultdict(list)
    labels = (Label.objects.filter(counted_submission_q("assignment__"))
              .filter(Q(unit_id__in=units) | Q(unit__origin_id__in=units))
              .annotate(root=Coalesce("unit__origin_id", "unit_id"), round=F("unit__hit__round"))
              .order_by("assignment__submitted_at", "assignment_id"))
    for task, field in DECIDING.items():
        for root, answer, round_ in labels.filter(unit__task=task).values_list("root", field, "round"):
            if answer is not None:
                answers[root].append((answer, round_))
    changed = []
    for state in states:
        unit = units[state.unit_id]
        redundancy = redundancy_of(unit.hit.project)
        given = [answer for answer, _ in answers[state.unit_id]]
        verdict = redundancy.verdict(given)
        new = {"counted": len(given), "yes": sum(given), "target": redundancy.target(given), "verdict": verdict,
               "policy": redundancy.policy,
               "settled_round": answers[state.unit_id][-1][1] if verdict == Verdict.SETTLED and given else None}
        if any(getattr(state, name) != value for name, value in new.items()):
            for name, value in {**new, "updated": timezone.now()}.items():
                setattr(state, name, value)
            changed.append(state)
    UnitState.objects.bulk_update(changed, ["counted", "yes", "target", "verdict", "policy", "settled_round",
                                            "updated"])
    return states
