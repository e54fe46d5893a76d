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
from django.db import connection
from django.db.models import QuerySet
from django.db.models.sql.constants import MULTI

from annotation.models import Annotator, Label, Task
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


@dataclasses.dataclass(frozen=True)
class TaskRatings:
    """One task's ratings as exports.agreement takes them: `ratings` is units x raters (1.0, 0.0, NaN = none).

    Within a unit, columns follow the annotators' ids, so one annotator's ratings sit in the same column of
    every unit where they are the k-th rater. `document_ids[i]` is the document of unit i.
    """

    task: str
    unit_ids: np.ndarray
    document_ids: np.ndarray
    ratings: np.ndarray

    @property
    def n_ratings(self) -> int:
        return int((~np.isnan(self.ratings)).sum())


def task_ratings(project: Project, task: str, source: str) -> TaskRatings:
    """All counted ratings of `task` in one query (values_list), laid out with NumPy, never a query per unit."""
    field = TASK_FIELD[task]
    # One fetch of four integers per label (~260,000 for KA: ~30 MB for a moment) is 2.5x faster than a
    # server-side cursor, and NumPy does the grouping.
    rows = list(analysis_labels(project, source).filter(unit__task=task, **{f"{field}__isnull": False})
                .order_by().values_list("unit_id", "annotator_id", field, "unit__hit__document_id"))
    flat = np.array(rows, dtype=np.int64).reshape(-1, 4)
    del rows
    unit, annotator, value, document = flat.T
    order = np.lexsort((annotator, unit))
    unit, value, document = unit[order], value[order], document[order]
    unit_ids, first, inverse, counts = np.unique(unit, return_index=True, return_inverse=True, return_counts=True)
    position = np.arange(len(unit)) - np.repeat(first, counts)
    width = int(counts.max()) if len(counts) else 0
    ratings = np.full((len(unit_ids), width), np.nan)
    ratings[inverse, position] = value
    return TaskRatings(task=task, unit_ids=unit_ids, document_ids=document[first], ratings=ratings)


def stream(queryset: QuerySet, chunk_size: int, *, as_stored: bool = False) -> Iterator:
    """The rows of `queryset`, fetched `chunk_size` at a time (a server-side cursor on PostgreSQL).

    `as_stored`: the values as the database driver gives them, without Django's per-value conversion (on SQLite a
    boolean is 0 or 1, a JSON field its text): for queries that select plain integers and text, where that
    conversion costs more than the fetch.

    On PostgreSQL the cursor is planned for reading every row (cursor_tuple_fraction 1.0, for this query only): with
    the default (0.1) the planner picks a plan that starts fast, and on the counted-label joins, whose size it
    underestimates, it looped over every HIT for each label: 134 s instead of 1.8 s for 69,000 labels.
    """
    def rows():
        if not as_stored:
            return queryset.iterator(chunk_size=chunk_size)
        compiler = queryset.query.get_compiler(using=queryset.db)
        return itertools.chain.from_iterable(compiler.execute_sql(MULTI, chunked_fetch=True, chunk_size=chunk_size))

    return _planned_for_every_row(rows)


def stream_sql(sql: str, params, chunk_size: int) -> Iterator[tuple]:
    """The rows of one SQL query as the driver gives them, read as `stream` reads a queryset with `as_stored`."""
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
