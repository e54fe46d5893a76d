"""Which labels the analytics read, and reading them fast (~335,000 labels at UniSumEval scale).

The rules, in one place:
- Which labels count is quality control's rule (annotation.quality.selectors): labels of submitted assignments,
  not of attention-check units (they are graded, not aggregated), not of submissions whose Grade does not count
  (failed, unless a manager overrode it). A submission without a grade counts.
- Simulated labels (`simulate_annotations`, annotators with provider "simulated") are never mixed with real ones
  silently. By default the analytics read the real labels; a project that has no real label yet (a pilot) reads
  its simulated ones. `include_simulated=True` reads both, and every report names its source
  ("real", "simulated" or "real+simulated") so a reader always knows.
- A published release's majority labels (exports.release, label source "release") are read only by a project that
  has no counted annotator label: a reference project. They are never mixed with annotators' labels, and there are
  no annotator labels behind them (no agreement can be computed from them).

`evaluators_of` names the automatic evaluators whose scores a project holds.
"""

import dataclasses
import itertools
import uuid
from collections.abc import Iterator

import numpy as np
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import F, QuerySet

from annotation.models import Annotator, Assignment, Label, Task
from annotation.models.assignment import counted_submission_q
from annotation.quality.selectors import check_labels as quality_check_labels
from annotation.quality.selectors import counted_labels as quality_counted_labels
from assist.models import EvaluatorScore
from corpus.models import Document, Project

from .models import ReleaseLabels

# The binary label each task's agreement and majority vote are computed on.
TASK_FIELD = {Task.FACT_VERIFICATION: "has_error", Task.KEYFACT_VALIDATION: "useful",
              Task.KEYFACT_ALIGNMENT: "aligned"}

REAL, SIMULATED, BOTH, RELEASE = "real", "simulated", "real+simulated", "release"


def counted_labels(project: Project) -> QuerySet[Label]:
    """The labels of `project` that count in aggregation, agreement and exports (simulated ones included).

    The rule itself belongs to quality control (annotation.quality.selectors.counted_labels).
    """
    return quality_counted_labels(Label.objects.filter(unit__hit__project=project))


def check_labels(project: Project) -> QuerySet[Label]:
    """Labels on attention-check units of submitted assignments: exported apart, never aggregated."""
    return quality_check_labels(Label.objects.filter(unit__hit__project=project))


def label_source(project: Project, *, include_simulated: bool = False) -> str:
    """Which labels the analytics of `project` read: see the module docstring."""
    counted = counted_labels(project)
    has_real = counted.exclude(annotator__provider=Annotator.Provider.SIMULATED).exists()
    if not has_real:
        if not counted.exists() and ReleaseLabels.objects.filter(project=project).exists():
            return RELEASE
        return SIMULATED
    if include_simulated and counted.filter(annotator__provider=Annotator.Provider.SIMULATED).exists():
        return BOTH
    return REAL


def analysis_labels(project: Project, source: str) -> QuerySet[Label]:
    labels = counted_labels(project)
    if source == REAL:
        return labels.exclude(annotator__provider=Annotator.Provider.SIMULATED)
    if source == SIMULATED:
        return labels.filter(annotator__provider=Annotator.Provider.SIMULATED)
    if source == BOTH:
        return labels
    if source == RELEASE:
        return labels.none()  # A release publishes majority labels only (exports.models.ReleaseLabels).
    raise ValueError(f"Unknown label source {source!r}")


# What a vote is on: the item, not the unit, so that the labels of a unit's top-up HITs (the same item, shown the same
# way) are that unit's labels, as aggregation counts them. KA's item is a pair, one integer: key-fact id * PAIR +
# sentence id.
TARGET_FIELDS = {Task.FACT_VERIFICATION: ("unit__summary_sentence_id",), Task.KEYFACT_VALIDATION: ("unit__keyfact_id",),
                 Task.KEYFACT_ALIGNMENT: ("unit__keyfact_id", "unit__summary_sentence_id")}
PAIR = 2**32
# Labels per fetch while the votes are read into arrays: the arrays are all that stays (6 integers a vote).
VOTES_CHUNK = 50_000


@dataclasses.dataclass(frozen=True)
class TaskVotes:
    """Every counted vote of one task as parallel arrays (one entry a vote), grouped by item and, within an item, in
    the order the votes' submissions counted: Assignment.submitted_at, ties broken by the assignment's id (the order
    the redundancy policy reads a unit's labels in).

    `target`: the item (TARGET_FIELDS); `value`: the task's answer, 1 or 0; `position`: the vote's place among its
    item's votes (0 for the first).
    """

    task: str
    target: np.ndarray
    annotator: np.ndarray
    value: np.ndarray
    document: np.ndarray
    position: np.ndarray

    def __len__(self) -> int:
        return len(self.target)


def task_votes(project: Project, task: str, source: str) -> TaskVotes:
    """The counted votes of `task`: one query read in chunks into integer arrays (never a Python object per vote:
    ~260,000 KA votes at UniSumEval scale), then sorted by NumPy."""
    field = TASK_FIELD[task]
    targets = TARGET_FIELDS[task]
    columns = (*targets, "annotator_id", field, "unit__hit__document_id", "assignment_id")
    labels = (analysis_labels(project, source)
              .filter(unit__task=task, **{f"{field}__isnull": False}, **{f"{name}__isnull": False for name in targets})
              .order_by().values_list(*columns))
    flat = integer_rows(labels).reshape(-1, len(columns))
    target = flat[:, 0] * PAIR + flat[:, 1] if len(targets) == 2 else flat[:, 0]
    annotator, value, document, assignment = flat[:, len(targets):].T
    del flat
    rank = _submission_rank(project, assignment)
    order = np.lexsort((assignment, rank, target))
    target, annotator, value, document = target[order], annotator[order], value[order], document[order]
    _, first, counts = np.unique(target, return_index=True, return_counts=True)
    position = np.arange(len(target)) - np.repeat(first, counts)
    return TaskVotes(task=task, target=target, annotator=annotator, value=value, document=document, position=position)


def integer_rows(queryset: QuerySet) -> np.ndarray:
    """The values of a values_list of integers (booleans count: 0/1 on SQLite, True/False on PostgreSQL), row after
    row, as one int64 array, with no more than VOTES_CHUNK rows as Python objects at a time.

    A plain cursor read by fetchmany, not `stream`'s server-side one: for the 260,000 KA votes at UniSumEval scale,
    2.3 s through the server-side cursor against 1.3 s (measured on PostgreSQL 2026-11-26); the driver keeps the
    rows as the server sent them until they are fetched, not as Python objects."""
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:  # queryset.none(): a release's labels (analysis_labels)
        return np.zeros(0, dtype=np.int64)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        chunks = iter(lambda: cursor.fetchmany(VOTES_CHUNK), [])
        return np.fromiter(itertools.chain.from_iterable(itertools.chain.from_iterable(chunks)), dtype=np.int64)


def _submission_rank(project: Project, assignment: np.ndarray) -> np.ndarray:
    """Each vote's submission's place in the order the project's counted submissions came in (submitted_at, then
    id): a few thousand assignments read once, rather than a timestamp per vote."""
    in_order = np.fromiter(
        Assignment.objects.filter(counted_submission_q(), hit__project=project)
        .order_by(F("submitted_at").asc(nulls_last=True), "pk").values_list("pk", flat=True), dtype=np.int64)
    by_id = np.argsort(in_order)
    found = np.searchsorted(in_order, assignment, sorter=by_id).clip(max=max(len(in_order) - 1, 0))
    rank = by_id[found] if len(in_order) else np.zeros(len(assignment), dtype=np.int64)
    # A submission that started counting after the votes were read: last, in id order (lexsort's next key).
    missing = in_order[rank] != assignment if len(in_order) else np.ones(len(assignment), dtype=bool)
    return np.where(missing, len(in_order), rank)


@dataclasses.dataclass(frozen=True)
class TaskRatings:
    """One task's ratings as exports.agreement takes them: units x raters (1.0, 0.0, NaN = none).

    `ratings` holds every counted rating; within a unit, columns follow the annotators' ids, so one annotator's
    ratings sit in the same column of every unit where they are the k-th rater. `first_two` holds each unit's first
    two counted ratings (TaskVotes' order), what the headline agreement reads: every design has them, however many
    labels a unit got in the end (exports.report says why that matters). A unit is an item (TARGET_FIELDS):
    `unit_ids` are the item keys, `document_ids[i]` the document of unit i.
    """

    task: str
    unit_ids: np.ndarray
    document_ids: np.ndarray
    ratings: np.ndarray
    first_two: np.ndarray

    @property
    def n_ratings(self) -> int:
        return int((~np.isnan(self.ratings)).sum())


def task_ratings(project: Project, task: str, source: str, votes: TaskVotes | None = None) -> TaskRatings:
    """All counted ratings of `task`, laid out with NumPy from `votes` (read here when not given)."""
    votes = task_votes(project, task, source) if votes is None else votes
    unit_ids, first, inverse, counts = np.unique(votes.target, return_index=True, return_inverse=True,
                                                 return_counts=True)
    width = int(counts.max()) if len(counts) else 0
    first_two = np.full((len(unit_ids), min(width, 2)), np.nan)
    early = votes.position < 2
    first_two[inverse[early], votes.position[early]] = votes.value[early]
    by_annotator = np.lexsort((votes.annotator, votes.target))
    ratings = np.full((len(unit_ids), width), np.nan)
    ratings[inverse[by_annotator], votes.position] = votes.value[by_annotator]
    return TaskRatings(task=task, unit_ids=unit_ids, document_ids=votes.document[first], ratings=ratings,
                       first_two=first_two)


def stream(queryset: QuerySet, chunk_size: int) -> Iterator:
    """The rows of `queryset` as Django converts them, fetched `chunk_size` at a time (a server-side cursor on
    PostgreSQL). Reading them without Django's per-value conversion, through its SQL compiler, bought nothing on the
    export when measured again (benchmarks/RESULTS.md, "The private-internals tricks measured again").

    On PostgreSQL the cursor is planned for reading every row (cursor_tuple_fraction 1.0, for this query only): with
    the default (0.1) the planner picks a plan that starts fast, and on the counted-label joins, whose size it
    underestimates, it looped over every HIT for each label: 134 s instead of 1.8 s for 69,000 labels.
    """
    return _planned_for_every_row(lambda: queryset.iterator(chunk_size=chunk_size))


def stream_sql(sql: str, params, chunk_size: int) -> Iterator[tuple]:
    """The rows of one SQL query as the driver gives them, fetched as `stream` fetches a queryset's."""
    def rows():
        with connection.chunked_cursor() as cursor:
            cursor.execute(sql, params)
            while fetched := cursor.fetchmany(chunk_size):
                yield from fetched

    return _planned_for_every_row(rows)


def _planned_for_every_row(rows) -> Iterator:
    """rows() read with the cursor planned for every row on PostgreSQL (see `stream`)."""
    if connection.vendor != "postgresql":
        yield from rows()
        return
    with connection.cursor() as cursor:
        cursor.execute("SHOW cursor_tuple_fraction")
        default = cursor.fetchone()[0]
        cursor.execute("SET cursor_tuple_fraction = 1.0")
    try:
        fetched = rows()
        first = next(fetched, None)  # The cursor is declared, and so planned, by here.
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('cursor_tuple_fraction', %s, false)", [default])
    if first is None:
        return
    yield first
    yield from fetched


def as_bool(value) -> bool | None:
    """A boolean read as stored (SQLite gives 0 or 1)."""
    return None if value is None else bool(value)


def as_uuid(value) -> uuid.UUID | None:
    """A UUID read as stored (SQLite gives its 32 hex digits), as Django converts it."""
    return value if value is None or isinstance(value, uuid.UUID) else uuid.UUID(value)


def document_attributes(project: Project) -> dict[int, dict]:
    """id -> the attributes agreement and scores are broken down by."""
    return {pk: {"domain": domain, "length": length, "input_type": input_type}
            for pk, domain, length, input_type in Document.objects.filter(project=project)
            .values_list("pk", "domain", "length", "input_type")}


def evaluators_of(project: Project) -> list[str]:
    """The names of the automatic evaluators (run here or imported) with scores in `project`."""
    return list(EvaluatorScore.objects.filter(project=project, status=EvaluatorScore.Status.OK).order_by("evaluator")
                .values_list("evaluator", flat=True).distinct())
