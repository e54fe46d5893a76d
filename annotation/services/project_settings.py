"""Changing a project's protocol settings, also once annotation has started, without corrupting labels given.

What may change, and when (each refusal says why in the manager's words):
- annotators per unit may always rise (HITs reopen for more labels); it may fall only before any HIT has started,
  since a unit would otherwise count more labels than the project asks for;
- the labels per item (the redundancy policy, the lead's margin and cap) only before any HIT has started: they
  decide which of the labels already given settle a unit, so a change would settle the same answers differently;
  a lead needs a margin of at least 1 and a cap of at least 2 and at least the margin (annotation.redundancy);
- the budget may rise at any time, but not fall below what the ledger says was already paid;
- the highlight fraction may not change while someone holds a HIT: the highlights they see would no longer be what
  the project says they saw (HITs already answered keep the highlights they showed, stored with each unit);
- the assistance level may not change once a HIT that follows the project's level has started: its labels were
  given under the old level (use a HIT's own level, or the ablation, to compare levels);
- everything else (pay, bonuses, checks for HITs built later, the quality policy for submissions graded later,
  reservations, screening) applies from now on and leaves what is stored as it is.
"""

from decimal import Decimal

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from corpus.models import Project, RedundancyPolicy

from ..models import Assignment, Hit, LedgerEntry, Task
from ..selectors import started_hits

# The refusals a form also gives for one field alone (annotation.forms uses them), in the same words.
MARGIN_TOO_SMALL = ("The lead that settles an item is at least 1 vote: with 0, the first two labels would settle "
                    "every item.")
CAP_TOO_SMALL = "Lead starts with two annotators, so the most per item is at least 2."
CAP_TOO_LARGE = "The most annotators per item is 20."
BUDGET_NEGATIVE = "The budget is 0 USD or more; leave it empty for no cap."

# Labels a policy pays, as a share of the fixed design's 3 labels per item, per task. From the simulation calibrated
# to the paper's agreement: benchmarks/redundancy_policies.py, seed 0, UniSumEval size (benchmarks/RESULTS.md,
# "Redundancy policies on simulated label streams"), adaptive 3 and lead with margin 2 and cap 5, every task's extra
# labels asked per item (annotation.services.topups), attention checks not included.
SIMULATED_SHARES = {
    RedundancyPolicy.ADAPTIVE: {Task.FACT_VERIFICATION: 0.696, Task.KEYFACT_VALIDATION: 0.702,
                                Task.KEYFACT_ALIGNMENT: 0.705},
    RedundancyPolicy.LEAD: {Task.FACT_VERIFICATION: 0.729, Task.KEYFACT_VALIDATION: 0.742,
                            Task.KEYFACT_ALIGNMENT: 0.750},
}
# The settings the simulation ran with: annotators per item for adaptive, margin and cap for lead.
SIMULATED_ANNOTATORS, SIMULATED_MARGIN, SIMULATED_CAP = 3, 2, 5


class SettingsRefused(Exception):
    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))


def label_share(project: Project, task: str) -> tuple[float, float, float | None]:
    """The labels `project`'s policy pays for `task`, as a share of its fixed design's (`annotators_per_unit` each):
    (fewest, most, the simulation's estimate or None where it did not run with these settings)."""
    policy, annotators = project.redundancy_policy, project.annotators_per_unit
    if policy == RedundancyPolicy.FIXED:
        return 1.0, 1.0, 1.0
    if policy == RedundancyPolicy.ADAPTIVE:
        first = annotators // 2 + 1
        if first == annotators:
            # One or two annotators: adaptive asks for all of them at once, as the fixed design.
            return 1.0, 1.0, 1.0
        simulated = SIMULATED_SHARES[policy][task] if annotators == SIMULATED_ANNOTATORS else None
        return first / annotators, 1.0, simulated
    # Lead does not depend on N: its labels per item are compared with N fixed annotators'.
    simulated = None
    if (project.lead_margin, project.lead_cap) == (SIMULATED_MARGIN, SIMULATED_CAP):
        simulated = SIMULATED_SHARES[policy][task] * SIMULATED_ANNOTATORS / annotators
    return min(2, project.lead_cap) / annotators, project.lead_cap / annotators, simulated


def spent_usd(project: Project) -> Decimal:
    """What the ledger says the project has paid: rewards, bonuses and the providers' fees."""
    total = LedgerEntry.objects.filter(project=project).aggregate(total=Sum("amount_usd"))["total"] or 0
    return Decimal(total).quantize(Decimal("0.01"))


def setting_problems(new: Project) -> dict[str, str]:
    """Field name -> why `new`'s labels per item or budget cannot be stored, whatever the project's state."""
    errors = {}
    if new.lead_margin is not None and new.lead_margin < 1:
        errors["lead_margin"] = MARGIN_TOO_SMALL
    if new.lead_cap is not None:
        if new.lead_cap < 2:
            errors["lead_cap"] = CAP_TOO_SMALL
        elif new.lead_cap > 20:
            errors["lead_cap"] = CAP_TOO_LARGE
        elif new.lead_margin is not None and new.lead_cap < new.lead_margin:
            # Checked whatever the policy: a stored pair is one a later switch to lead can use.
            errors["lead_cap"] = (
                f"The most annotators per item ({new.lead_cap}) is below the lead ({new.lead_margin}): no item "
                "could ever lead by that much, and every item would go to review.")
    if new.budget_usd is not None and new.budget_usd < 0:
        errors["budget_usd"] = BUDGET_NEGATIVE
    return errors


def change_refusals(current: Project, new: Project) -> dict[str, str]:
    """Field name -> why it may not change from `current` to `new` now; empty when every change may be made."""
    errors = setting_problems(new)
    hits = Hit.objects.filter(project=current)
    if new.annotators_per_unit < current.annotators_per_unit and started_hits(hits).exists():
        errors["annotators_per_unit"] = (
            f"The annotators the result stands for can rise but not fall below {current.annotators_per_unit} once "
            "annotation has started: items already labelled would count more labels than the project asks for.")
    if new.highlight_fraction != current.highlight_fraction and Assignment.objects.filter(
            hit__project=current, status=Assignment.Status.RESERVED, expires_at__gt=timezone.now()).exists():
        errors["highlight_fraction"] = (
            "The highlight fraction cannot change while someone holds a HIT: what they see would no longer match "
            "the project. Try again when no HIT is reserved.")
    if new.assistance != current.assistance and started_hits(hits.filter(assistance="")).exists():
        errors["assistance"] = (
            f"The assistance level cannot change once HITs at the project's level ({current.get_assistance_display()}) "
            "have started: their labels were given with it. Set a level on single HITs, or run the ablation, to "
            "compare levels.")
    changed = [name for name in ("redundancy_policy", "lead_margin", "lead_cap")
               if getattr(new, name) != getattr(current, name) and name not in errors]
    if changed and started_hits(hits).exists():
        policy = RedundancyPolicy(current.redundancy_policy).name.lower()
        why = {
            "redundancy_policy": f"How many annotators each item gets stays {policy} once annotation has started",
            "lead_margin": f"The lead that settles an item stays {current.lead_margin} once annotation has started",
            "lead_cap": f"The most annotators per item stays {current.lead_cap} once annotation has started",
        }
        for name in changed:
            errors[name] = (f"{why[name]}: it decides which labels already given settle an item, and a change would "
                            "settle the same answers differently. Start a new project to try another design.")
    if (new.budget_usd is not None and "budget_usd" not in errors
            and (current.budget_usd is None or new.budget_usd < current.budget_usd)):
        spent = spent_usd(current)
        if new.budget_usd < spent:
            errors["budget_usd"] = (f"The budget cannot be less than the {spent} USD already paid (rewards, bonuses "
                                    "and the providers' fees). Raise it, or leave it empty for no cap.")
    return errors


def update_settings(project: Project, new: Project, fields: list[str]) -> Project:
    """Save `fields` of `new` onto the project, all or nothing, if `change_refusals` allows every change; checked
    under the project's row lock, so that a HIT started meanwhile is seen (SettingsRefused otherwise)."""
    with transaction.atomic():
        current = Project.objects.select_for_update().get(pk=project.pk)
        if errors := change_refusals(current, new):
            raise SettingsRefused(errors)
        for name in fields:
            setattr(current, name, getattr(new, name))
        current.save(update_fields=fields)
        return current
