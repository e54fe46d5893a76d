"""What the labels of a project cost: spent, committed, projected to finish, and saved against the fixed design
(BRIEF, "What a study costs"), per task and per domain.

Money is counted two ways. *Labels* are valued at the project's pay for one item (its hourly wage times
FINEGRAIN_SECONDS_PER_UNIT, the rule crowd rewards follow: annotation.crowd.publishing.reward_for), whoever gave
them, so that in-house and crowd projects read alike; *paid* is what the ledger says the providers were paid
(rewards, fees and bonuses, annotation/crowd/outbox.py). Attention checks are labels too: each HIT carries them at the
project's rate, so every figure of labels includes their share.

- spent: counted labels on real units; committed: places held now (reservations, submissions awaiting their
  provider's confirmation), which are paid if they count; projected: the labels still to come for the units not
  settled, from the live share of units that needed a label more (the policy's first round, plus that share);
- saved: for the settled units, the labels the fixed design of N would have taken minus the labels they took.

What the figures read from every label (`label_figures`) takes seconds at 10x UniSumEval scale, so the cost page
shows them as stored numbers (corpus.snapshots, `costs_basis` and `costs_compute`), while the money held and paid and
the budget are read now. A decision on the budget (a top-up) reads them all now (`project_costs`).
"""

from collections import Counter
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.db.models import Case, Count, F, Max, Min, Q, Sum, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from corpus.models import Job, Project
from corpus.snapshots import NumbersState, data_jobs, numbers_state

from .. import fingerprints
from ..job_kinds import COSTS as KIND
from ..models import Assignment, AttentionCheck, Label, LedgerEntry, Task, Unit, UnitState
from ..models.assignment import counted_submission_q
from ..redundancy import Verdict, redundancy_of

CENT = Decimal("0.01")


def label_usd(project: Project) -> Decimal:
    """The project's pay for one item's label."""
    return project.hourly_wage_usd * Decimal(settings.FINEGRAIN_SECONDS_PER_UNIT) / Decimal(3600)


def usd(amount) -> Decimal:
    return Decimal(amount).quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass
class CostRow:
    """One task, or one domain of a task."""

    task: str
    domain: str = ""
    units: int = 0
    settled: int = 0
    escalated: int = 0
    needs_more: int = 0
    labels: int = 0  # counted labels on real units
    labels_of_settled: int = 0
    rounds: Counter = field(default_factory=Counter)  # settled units per round they settled in

    @property
    def open(self) -> int:
        return self.units - self.settled - self.escalated

    @property
    def labels_per_settled_unit(self) -> float | None:
        return self.labels_of_settled / self.settled if self.settled else None


@dataclass
class ProjectCosts:
    project: Project
    policy: str
    annotators: int
    first_round: int
    label_usd: Decimal
    check_share: float  # of all labels, the attention checks'
    split_share: float | None  # of the units judged after their first round, those that needed a label more
    extra_per_unit: float | None  # labels beyond the first round, asked per judged unit so far
    tasks: list[CostRow]
    domains: list[CostRow]
    committed_labels: int  # items of the HITs held now, checks included
    paid_usd: Decimal
    budget_usd: Decimal | None

    def _with_checks(self, labels: float) -> Decimal:
        return usd(Decimal(labels) * self.label_usd / Decimal(1 - self.check_share))

    @property
    def expected_extra(self) -> float:
        """Labels a unit is expected to need beyond the first round: as many as the units judged so far asked
        (under adaptive N = 3, the split share; under lead, a split asks two or more), else none yet."""
        return 0.0 if self.extra_per_unit is None or self.policy == "fixed" else self.extra_per_unit

    def spent_labels(self, row: CostRow | None = None) -> int:
        return sum(r.labels for r in self.tasks) if row is None else row.labels

    def projected_labels(self, row: CostRow) -> float:
        """Labels still to come for the row's units not settled: up to the first round, then the expected extra."""
        remaining_first = max(0, row.open * self.first_round - (row.labels - row.labels_of_settled))
        return remaining_first + row.open * self.expected_extra

    def saved_labels(self, row: CostRow) -> int:
        return row.settled * self.annotators - row.labels_of_settled

    def money(self, row: CostRow) -> dict:
        return {"spent": self._with_checks(row.labels), "projected": self._with_checks(self.projected_labels(row)),
                "saved": self._with_checks(self.saved_labels(row)),
                "fixed": self._with_checks(row.units * self.annotators)}

    @property
    def total(self) -> dict:
        rows = [self.money(row) for row in self.tasks]
        total = {name: sum((row[name] for row in rows), Decimal("0")) for name in ("spent", "projected", "saved",
                                                                                    "fixed")}
        total["committed"] = usd(self.committed_labels * self.label_usd)
        total["to_finish"] = total["spent"] + total["committed"] + total["projected"]
        return total

    @property
    def over_budget(self) -> bool:
        return self.budget_usd is not None and self.total["to_finish"] > self.budget_usd


def project_costs(project: Project) -> ProjectCosts:
    """The costs from the labels as they are now: for the decisions that must not wait for stored figures (whether a
    top-up goes past the budget, annotation.services.topups and annotation.crowd.topups). The cost page shows the
    same figures stored (`stored_costs`)."""
    return costs_from(project, label_figures(project))


def label_figures(project: Project) -> dict:
    """What the costs read from every label and unit state of the project, as JSON (Decimals as strings): the stored
    figures of the cost page (`costs_compute`), and what `project_costs` builds on now."""
    redundancy = redundancy_of(project)
    real = Q(unit__attention_check__isnull=True)
    units = (Unit.objects.filter(hit__project=project, hit__round=0, origin__isnull=True)
             .exclude(pk__in=AttentionCheck.objects.filter(unit__hit__project=project).values("unit_id")))
    tasks = {task: CostRow(task=task) for task in Task.values}
    domains: dict[tuple[str, str], CostRow] = {}

    def row_of(task: str, domain: str) -> CostRow:
        return domains.setdefault((task, domain), CostRow(task=task, domain=domain))

    for task, domain, n in (units.order_by().values_list("task", "hit__document__domain")
                            .annotate(n=Count("pk"))):
        tasks[task].units += n
        row_of(task, domain or "").units += n
    states = UnitState.objects.filter(project=project).values_list("task", "unit__hit__document__domain",
                                                                    "verdict", "counted", "settled_round")
    for task, domain, verdict, counted, settled_round in states:
        for row in (tasks[task], row_of(task, domain or "")):
            if verdict == Verdict.SETTLED:
                row.settled += 1
                row.labels_of_settled += counted
                row.rounds[settled_round or 0] += 1
            elif verdict == Verdict.ESCALATED:
                row.escalated += 1
                row.labels_of_settled += counted
            elif verdict == Verdict.NEEDS_MORE:
                row.needs_more += 1
    labels = (Label.objects.filter(counted_submission_q("assignment__"), real, unit__hit__project=project)
              .order_by().values_list("unit__task", "unit__hit__document__domain").annotate(n=Count("pk")))
    for task, domain, n in labels:
        tasks[task].labels += n
        row_of(task, domain or "").labels += n
    all_labels = Label.objects.filter(counted_submission_q("assignment__"), unit__hit__project=project).count()
    check_labels = Label.objects.filter(counted_submission_q("assignment__"), unit__hit__project=project,
                                        unit__attention_check__isnull=False).count()
    judged = UnitState.objects.filter(project=project).exclude(verdict=Verdict.COLLECTING)
    after_first = judged.count()
    more = judged.filter(Q(verdict=Verdict.NEEDS_MORE) | Q(counted__gt=redundancy.first_round)).count()
    asked = judged.aggregate(n=Sum(Case(When(verdict=Verdict.NEEDS_MORE, then=F("target")), default=F("counted"))))
    asked = asked["n"] or 0
    return {
        "policy": redundancy.policy, "annotators": project.annotators_per_unit, "first_round": redundancy.first_round,
        "label_usd": str(label_usd(project)),
        "check_share": (check_labels / all_labels) if all_labels else float(project.attention_check_rate),
        "split_share": (more / after_first) if after_first else None,
        "extra_per_unit": (asked / after_first - redundancy.first_round) if after_first else None,
        "tasks": [_row_data(tasks[task]) for task in Task.values],
        "domains": [_row_data(domains[key]) for key in sorted(domains)],
    }


_ROW_FIELDS = ("task", "domain", "units", "settled", "escalated", "needs_more", "labels", "labels_of_settled")


def _row_data(row: CostRow) -> dict:
    return {**{name: getattr(row, name) for name in _ROW_FIELDS}, "rounds": sorted(row.rounds.items())}


def _row_from(data: dict) -> CostRow:
    return CostRow(**{name: data[name] for name in _ROW_FIELDS},
                   rounds=Counter(dict(data["rounds"])))


def costs_from(project: Project, figures: dict) -> ProjectCosts:
    """The costs from the figures of the labels (`label_figures`, now or stored), with what money is held and paid
    and the budget read now: cheap, indexed, and never older than the ledger."""
    now = timezone.now()
    committed = (Assignment.objects.holding_a_place(now).filter(hit__project=project)
                 .exclude(counted_submission_q()).aggregate(n=Sum("hit__unit_count"))["n"] or 0)
    paid = LedgerEntry.objects.filter(project=project).aggregate(total=Sum("amount_usd"))["total"] or Decimal("0")
    return ProjectCosts(
        project=project, policy=figures["policy"], annotators=figures["annotators"],
        first_round=figures["first_round"], label_usd=Decimal(figures["label_usd"]),
        check_share=figures["check_share"], split_share=figures["split_share"],
        extra_per_unit=figures["extra_per_unit"],
        tasks=[_row_from(row) for row in figures["tasks"]], domains=[_row_from(row) for row in figures["domains"]],
        committed_labels=committed, paid_usd=usd(paid), budget_usd=project.budget_usd)


def settle_times(project: Project) -> dict[str, dict]:
    """Per task, how long settled items took: from an item's first counted label to its last (the one that settled
    it), in hours, as the median and the 90th percentile over the settled items (None before any)."""
    settled = UnitState.objects.filter(project=project, verdict=Verdict.SETTLED)
    spans = (Label.objects.filter(counted_submission_q("assignment__"))
             .filter(Q(unit_id__in=settled.values("unit_id")) | Q(unit__origin_id__in=settled.values("unit_id")))
             .annotate(root=Coalesce("unit__origin_id", "unit_id")).order_by()
             .values("root", "unit__task").annotate(first=Min("assignment__submitted_at"),
                                                    last=Max("assignment__submitted_at")))
    hours: dict[str, list[float]] = {task: [] for task in Task.values}
    for row in spans:
        hours[row["unit__task"]].append((row["last"] - row["first"]).total_seconds() / 3600)
    return {task: {"median": _quantile(values, 0.5), "p90": _quantile(values, 0.9), "n": len(values)}
            for task, values in hours.items()}


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rounds_table(rows: list[CostRow]) -> list[tuple[int, int]]:
    """(round, settled units) over `rows`, every round from the first to the last seen."""
    rounds: Counter = Counter()
    for row in rows:
        rounds.update(row.rounds)
    return [(number, rounds[number]) for number in range(max(rounds, default=-1) + 1)]


# The cost page's figures are stored numbers (corpus.snapshots): reading every counted label of the project takes
# seconds at 10x UniSumEval scale, so the page shows the figures a job computed, with what money is held and paid
# and the budget read now (`costs_from`).


def costs_basis(project: Project, variant: str = "") -> dict:
    """What the stored figures read, in a few aggregates that move whenever a figure would: the counted submissions
    (a label counts only through one: a new submission, a discard, a confirmation or a grade overridden moves them),
    the HITs (units come with them), the unit states (settling writes them and their `updated`; the budget's
    escalation writes only the verdict, which the verdicts' counts see), the settings the figures are priced and
    projected with, and the jobs that change data (imports: the documents' domains)."""
    states = UnitState.objects.filter(project=project).aggregate(
        n=Count("pk"), counted=Sum("counted"), target=Sum("target"), rounds=Sum("settled_round"),
        settled=Count("pk", filter=Q(verdict=Verdict.SETTLED)),
        escalated=Count("pk", filter=Q(verdict=Verdict.ESCALATED)),
        needs_more=Count("pk", filter=Q(verdict=Verdict.NEEDS_MORE)), updated=Max("updated"))
    return {
        "submissions": fingerprints.counted_submissions(project), "hits": fingerprints.hits(project),
        "states": states,
        # As the database gives them back, whatever a Project in memory holds (an enum, an int for a float). The
        # budget is read now, not stored: changing it moves nothing here.
        "settings": (str(usd(project.hourly_wage_usd)), int(settings.FINEGRAIN_SECONDS_PER_UNIT),
                     int(project.annotators_per_unit), str(project.redundancy_policy), int(project.lead_margin),
                     int(project.lead_cap), float(project.attention_check_rate)),
        "jobs": data_jobs(project),
    }


def costs_compute(job: Job) -> dict:
    project = job.project
    figures = label_figures(project)
    return {**figures, "settle_times": settle_times(project),
            "summary": {"labels": sum(row["labels"] for row in figures["tasks"])}}


def newer_submissions(state: NumbersState) -> str:
    """What the page says changed since the stored figures (the kind's `since`): "" when only discards, grades,
    confirmations or settings did."""
    if state.stored is None:
        return ""
    n = state.basis["submissions"]["n"] - state.stored.basis["submissions"]["n"]
    return f"{n} newer counted submission{'' if n == 1 else 's'}" if n > 0 else ""


@dataclass
class StoredCosts:
    """The cost page's figures: stored (`state`), rebuilt with the money held and paid now."""

    state: NumbersState
    costs: ProjectCosts | None
    times: dict[str, dict] | None


def stored_costs(project: Project) -> StoredCosts:
    """The stored figures and how they stand; None of them before the first computation. Starts nothing."""
    state = numbers_state(project, KIND)
    data = state.data
    if data is None:
        return StoredCosts(state, None, None)
    return StoredCosts(state, costs_from(project, data), data["settle_times"])
