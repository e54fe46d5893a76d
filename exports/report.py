"""The agreement report of a project (paper section 4 and table 2).

Per task, overall and broken down by domain, by short/long and by dialogue/non-dialogue. The primary
coefficient is the paper's: Krippendorff's alpha (nominal) for fact verification and key-fact alignment,
Gwet's AC1 for key-fact validation, whose labels are heavily imbalanced; the other coefficient is reported
next to it. Every value comes with its percentile bootstrap interval, the units rated at least twice and the
ratings, all computed by exports.agreement on the arrays exports.selectors builds.

Each is computed twice. The headline (`primary`, `secondary`) reads each unit's first two counted labels, in the
order their submissions counted. When a unit's third label is bought only because its first two disagree (BRIEF,
"What a study costs"), the units rated three times are exactly those where the raters split, and those whose first
two agree never get the third label that could have disagreed: agreement over all labels then measures the
collection design as much as the annotators. Every design has two labels a unit, so the headline stays comparable
with fixed designs and with the paper. Beside it (`primary_all`, `secondary_all`), the same coefficients over all
counted labels.
"""

import dataclasses
import math

import numpy as np

from annotation.models import Task
from corpus.models import Project

from .agreement import AgreementEstimate, RatingCounts, ac1_with_interval, alpha_with_interval, rating_counts
from .selectors import TaskVotes, document_attributes, label_source, task_ratings

# Paper section 4.1, table 2 ("Avg. IAA"): the published reference points.
PAPER_REFERENCE = {Task.FACT_VERIFICATION: 0.60, Task.KEYFACT_VALIDATION: 0.88, Task.KEYFACT_ALIGNMENT: 0.58}
PRIMARY = {Task.FACT_VERIFICATION: "krippendorff_alpha", Task.KEYFACT_VALIDATION: "gwet_ac1",
           Task.KEYFACT_ALIGNMENT: "krippendorff_alpha"}
COEFFICIENT_NAMES = {"krippendorff_alpha": "Krippendorff's alpha", "gwet_ac1": "Gwet's AC1"}
BREAKDOWNS = ("domain", "length", "input_type")
# Both labels of a binary task are possible answers, used or not (irrCAC's categ.labels).
BINARY = (0.0, 1.0)
# What each set of labels is, in the words the page, the CSV, the command and the card use.
HEADLINE_LABELS = "first two counted labels of each unit"
ALL_LABELS = "all counted labels"


@dataclasses.dataclass(frozen=True)
class AgreementRow:
    """One group's agreement: the headline on each unit's first two counted labels (`primary`, `secondary`), and
    the same coefficients on all counted labels (`primary_all`, `secondary_all`)."""

    task: str
    breakdown: str  # "overall", "domain", "length" or "input_type"
    group: str
    primary: AgreementEstimate
    secondary: AgreementEstimate
    primary_all: AgreementEstimate
    secondary_all: AgreementEstimate

    @property
    def n_units(self) -> int:
        return self.primary.n_units

    @property
    def n_ratings(self) -> int:
        return self.primary.n_ratings

    @property
    def n_ratings_all(self) -> int:
        return self.primary_all.n_ratings

    def flat(self) -> dict:
        """One CSV/JSON row; NaN becomes None. The keys a reader had before the headline moved to the first two
        labels keep their names and now hold the headline (`labels` says so); `all_labels_*` the values over all
        counted labels."""
        row = {"task": self.task, "breakdown": self.breakdown, "group": self.group,
               "n_units": self.n_units, "n_ratings": self.n_ratings}
        for prefix, estimate in (("primary", self.primary), ("secondary", self.secondary)):
            row[f"{prefix}_coefficient"] = estimate.coefficient
            row.update(_values(prefix, estimate))
        row["labels"] = HEADLINE_LABELS
        row["all_labels_n_units"] = self.primary_all.n_units
        row["all_labels_n_ratings"] = self.n_ratings_all
        for prefix, estimate in (("primary", self.primary_all), ("secondary", self.secondary_all)):
            row.update(_values(f"all_labels_{prefix}", estimate))
        return row


def _values(prefix: str, estimate: AgreementEstimate) -> dict:
    values = {}
    for name in ("value", "ci_low", "ci_high"):
        value = getattr(estimate, name)
        values[f"{prefix}_{name}"] = None if math.isnan(value) else round(value, 4)
    return values


@dataclasses.dataclass(frozen=True)
class AgreementReport:
    project: str
    label_source: str
    n_boot: int
    rows: list[AgreementRow]

    def for_task(self, task: str) -> list[AgreementRow]:
        return [row for row in self.rows if row.task == task]

    def overall(self, task: str) -> AgreementRow | None:
        return next((row for row in self.for_task(task) if row.breakdown == "overall"), None)

    def as_dict(self) -> dict:
        return {"project": self.project, "label_source": self.label_source, "n_boot": self.n_boot,
                "paper_reference": {str(task): value for task, value in PAPER_REFERENCE.items()},
                "headline_labels": HEADLINE_LABELS, "beside_labels": ALL_LABELS,
                "rows": [row.flat() for row in self.rows]}


def estimates(counts: RatingCounts, task: str, n_boot: int, seed: int) -> tuple[AgreementEstimate, ...]:
    """(primary, secondary) for one group of units; both share one count matrix."""
    alpha = alpha_with_interval(counts, n_boot=n_boot, seed=seed)
    ac1 = ac1_with_interval(counts, categories=BINARY, n_boot=n_boot, seed=seed)
    return (ac1, alpha) if PRIMARY[task] == "gwet_ac1" else (alpha, ac1)


def agreement_report(project: Project, *, include_simulated: bool = False, n_boot: int = 1000,
                     seed: int = 0, source: str | None = None,
                     votes: dict[str, TaskVotes] | None = None) -> AgreementReport:
    """`votes`: the tasks' votes when the caller has read them already (exports.figures shares them with
    Dawid-Skene)."""
    source = source or label_source(project, include_simulated=include_simulated)
    attributes = document_attributes(project)
    rows = []
    for task in (Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT):
        ratings = task_ratings(project, task, source, votes=(votes or {}).get(task))
        if not len(ratings.unit_ids):
            continue
        # Count matrices with both categories declared, built once; groups are row subsets of them.
        first_two = rating_counts(ratings.first_two, categories=BINARY)
        every = rating_counts(ratings.ratings, categories=BINARY)
        full = _rated_rows(ratings.ratings)
        groups = [("overall", "all", np.ones(len(ratings.unit_ids), dtype=bool))]
        for breakdown in BREAKDOWNS:
            values = np.array([attributes[doc][breakdown] for doc in ratings.document_ids.tolist()], dtype=object)
            for group in sorted(set(values.tolist())):
                groups.append((breakdown, group, values == group))
        for breakdown, group, mask in groups:
            headline = estimates(RatingCounts(first_two.counts[mask[full]], first_two.categories), task, n_boot, seed)
            beside = estimates(RatingCounts(every.counts[mask[full]], every.categories), task, n_boot, seed)
            rows.append(AgreementRow(str(task), breakdown, str(group), *headline, *beside))
    return AgreementReport(project=project.slug, label_source=source, n_boot=n_boot, rows=rows)


def _rated_rows(ratings: np.ndarray) -> np.ndarray:
    """rating_counts drops units nobody rated; the selector never yields one, but keep the masks aligned."""
    return (~np.isnan(ratings)).any(axis=1)
