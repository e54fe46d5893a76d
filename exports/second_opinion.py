"""Dawid-Skene beside majority vote, per task of a project: the second opinion the analytics page and the export show.

Majority vote stays the label of record (paper section 4, appendix D.1; exports.scores.TIE_BREAK). Dawid-Skene
(exports.dawid_skene) reads the same counted human labels as the vote (exports.selectors.task_votes): an AI
pre-label is never a vote, since the benchmark exists to judge AI evaluators (it is not a Label at all, but the
unit's `ai_category`). Per item it gives a label and the posterior probability of the task's positive answer (an
error, useful, aligned); per annotator, the sensitivity and specificity it estimated, shown next to the annotator's
attention-check pass rate: a careless annotator who got past the checks shows up here.

Items are keyed as the votes are (exports.selectors.TARGET_FIELDS). Everything is NumPy arrays: the EM runs on
integer codes (dawid_skene_codes), and an export looks its items up a chunk at a time (`TaskOpinion.lookup`).
"""

import dataclasses
import math

import numpy as np
from django.db.models import Sum

from annotation.models import Annotator, Assignment, Grade, Task
from corpus.models import Project

from .dawid_skene import dawid_skene_codes, majority_differs_share
from .scores import TIE_BREAK
from .selectors import TaskVotes, task_votes

TASKS = (Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT)
# The EM stops once no posterior moves by more than 1e-6: 45 iterations on simulated KA labels of UniSumEval's size
# (~25 ms each), but 166 on the demo's simulated FV labels, which dawid_skene's default cap of 100 would have cut
# short. A run that still has not converged says so (`converged`) wherever it is shown.
MAX_ITERATIONS = 1000
# dawid_skene's defaults, written down because the export's notes name them.
SMOOTHING = 0.01
TOLERANCE = 1e-6
CLASSES = (False, True)


@dataclasses.dataclass(frozen=True)
class TaskOpinion:
    """Dawid-Skene on one task's counted votes.

    Per item (`targets`, sorted): `label` (1 or 0) and `posterior` (P(positive)). Per annotator (`annotators`, ids):
    `labels_given`, `sensitivity` (P(says positive | positive)) and `specificity` (P(says negative | negative)).
    `differs`: the items whose Dawid-Skene label is not their majority label (majority_differs_share, with the
    task's tie rule for both), out of `decided`.
    """

    task: str
    targets: np.ndarray
    label: np.ndarray
    posterior: np.ndarray
    annotators: np.ndarray
    labels_given: np.ndarray
    sensitivity: np.ndarray
    specificity: np.ndarray
    differs_share: float
    decided: int
    iterations: int
    converged: bool

    @property
    def differs(self) -> int:
        return 0 if math.isnan(self.differs_share) else round(self.differs_share * self.decided)

    def lookup(self, keys) -> dict[int, tuple[int, float]]:
        """key -> (Dawid-Skene label, posterior) for those of `keys` (item keys) that have counted votes."""
        keys = np.asarray(keys, dtype=np.int64)
        if not len(keys) or not len(self.targets):
            return {}
        at = np.searchsorted(self.targets, keys).clip(max=len(self.targets) - 1)
        found = self.targets[at] == keys
        return dict(zip(keys[found].tolist(), zip(self.label[at[found]].tolist(),
                                                  self.posterior[at[found]].tolist())))


def task_opinion(votes: TaskVotes) -> TaskOpinion:
    targets, unit = np.unique(votes.target, return_inverse=True)
    annotators, annotator = np.unique(votes.annotator, return_inverse=True)
    on_tie = TIE_BREAK[votes.task]
    result = dawid_skene_codes(unit, annotator, votes.value, classes=CLASSES, on_tie=on_tie, smoothing=SMOOTHING,
                               max_iterations=MAX_ITERATIONS, tolerance=TOLERANCE)
    positive, negative = CLASSES.index(True), CLASSES.index(False)
    share = majority_differs_share(
        result, zip(unit.tolist(), annotator.tolist(), (votes.value == 1).tolist()), on_tie=on_tie)
    return TaskOpinion(
        task=str(votes.task), targets=targets, label=result.label_index.astype(np.int8),
        posterior=result.posteriors[:, positive], annotators=annotators,
        labels_given=np.bincount(annotator, minlength=len(annotators)),
        sensitivity=result.confusion[:, positive, positive], specificity=result.confusion[:, negative, negative],
        differs_share=share, decided=len(targets) if on_tie is not None else _decided(unit, votes.value),
        iterations=result.iterations, converged=result.converged)


def _decided(unit: np.ndarray, value: np.ndarray) -> int:
    """Items whose votes do not split evenly (majority_vote with no tie rule leaves those undecided)."""
    yes = np.bincount(unit, weights=value)
    return int((2 * yes != np.bincount(unit)).sum())


def second_opinions(project: Project, source: str, *, votes: dict[str, TaskVotes] | None = None,
                    ) -> dict[str, TaskOpinion]:
    """Per task with counted votes, its TaskOpinion; `votes` when the caller read them already. One task's votes
    are held at a time when they are read here."""
    opinions = {}
    for task in TASKS:
        read = votes[task] if votes is not None and task in votes else task_votes(project, task, source)
        if len(read):
            opinions[str(task)] = task_opinion(read)
        del read
    return opinions


def check_pass_rates(project: Project, annotator_ids) -> dict[int, tuple[int, int]]:
    """Per annotator: (attention checks passed, checks) over their confirmed submissions in `project`, failed ones
    included: the quality dashboard's "checks passed / failed" (annotation.quality.dashboard.project_quality)."""
    rows = (Grade.objects.filter(assignment__hit__project=project, assignment__status=Assignment.Status.SUBMITTED,
                                 assignment__confirmed_at__isnull=False, assignment__annotator_id__in=annotator_ids)
            .order_by().values("assignment__annotator_id")
            .annotate(total=Sum("checks_total"), failed=Sum("checks_failed"))
            .values_list("assignment__annotator_id", "total", "failed"))
    return {annotator_id: ((total or 0) - (failed or 0), total or 0) for annotator_id, total, failed in rows}


ANNOTATOR_COLUMNS = ("task", "annotator", "labels", "sensitivity", "specificity", "checks_passed", "checks",
                     "check_pass_rate")


def annotator_rows(project: Project, opinions: dict[str, TaskOpinion]) -> list[dict]:
    """Per task and annotator, under their pseudonym (never a user or worker id): labels, Dawid-Skene's sensitivity
    and specificity, attention checks passed. Least informative first (lowest sensitivity + specificity, Youden's
    J + 1): the annotators worth a look."""
    ids = sorted({int(pk) for opinion in opinions.values() for pk in opinion.annotators.tolist()})
    names = {pk: Annotator(public_id=public_id).pseudonym
             for pk, public_id in Annotator.objects.filter(pk__in=ids).values_list("pk", "public_id")}
    checks = check_pass_rates(project, ids)
    rows = []
    for task, opinion in opinions.items():
        task_rows = []
        for k, annotator_id in enumerate(opinion.annotators.tolist()):
            passed, total = checks.get(annotator_id, (0, 0))
            task_rows.append({
                "task": task, "annotator": names[annotator_id], "labels": int(opinion.labels_given[k]),
                "sensitivity": round(float(opinion.sensitivity[k]), 4),
                "specificity": round(float(opinion.specificity[k]), 4),
                "checks_passed": passed, "checks": total,
                "check_pass_rate": round(passed / total, 4) if total else None})
        task_rows.sort(key=lambda row: (row["sensitivity"] + row["specificity"], row["annotator"]))
        rows += task_rows
    return rows


def task_rows(opinions: dict[str, TaskOpinion]) -> list[dict]:
    """Per task: units, how many Dawid-Skene labels differ from the majority, and how the EM ended."""
    return [{"task": task, "units": len(opinion.targets), "decided": opinion.decided, "differs": opinion.differs,
             "differs_share": None if math.isnan(opinion.differs_share) else round(opinion.differs_share, 4),
             "iterations": opinion.iterations, "converged": opinion.converged, "max_iterations": MAX_ITERATIONS}
            for task, opinion in opinions.items()]


def dawid_skene_summary(project: Project, opinions: dict[str, TaskOpinion], source: str) -> dict:
    """What the export writes beside its rows (stem.dawid_skene.json) and its card summarizes."""
    return {"label_source": source, "label_of_record": "majority vote (exports.scores.TIE_BREAK)",
            "method": {"name": "Dawid-Skene (1979) EM, started from the majority-vote shares",
                       "smoothing": SMOOTHING, "max_iterations": MAX_ITERATIONS, "tolerance": TOLERANCE,
                       "ties": "broken as majority vote breaks them (exports.scores.TIE_BREAK)",
                       "reads": "counted human labels only; an AI pre-label is never a vote"},
            "tasks": task_rows(opinions), "annotators": annotator_rows(project, opinions)}
