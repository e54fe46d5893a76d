"""The analytics figures of a project: one kind of stored numbers (corpus.snapshots, registered in exports.tasks),
computed by a job and never shown once the labels they came from changed.

Computing them reads every counted label and bootstraps agreement: seconds at UniSumEval scale, minutes beyond, so
it never runs inside a request. `figures_compute` builds, in one pass over the labels, everything the analytics page
draws and every CSV it offers, as plain JSON. Two variants are kept side by side: the counted labels (""), and the
same with simulated labels counted ("simulated").

The basis (`figures_basis`, from the parts in annotation.fingerprints) moves whenever counted labels, a submission's
standing (status, identity, grade, override), any grade (the attention-check pass rates), an adjudication, a
key-fact's status, the corpus, the HITs, an evaluator score or a release's labels do, and when a job that changes
data finishes (not when one that only reads does: an export, stored numbers).
"""

import math

from django.db.models import Count, Max
from django.db.models.functions import TruncHour
from django.utils import timezone

from annotation import fingerprints
from annotation.models import Task
from assist.models import EvaluatorScore
from corpus.models import Job, Project
from corpus.snapshots import corpus_parts, data_jobs

from . import plots
from .analytics import Analytics, project_analytics
from .evaluators import detection_report
from .job_kinds import ANALYTICS as KIND  # noqa: F401 (the kind's code, for the pages)
from .models import ReleaseLabels
from .paper_tables import (
    RANKED,
    cell,
    csv_rows,
    domain_lengths,
    header_rows,
    missing_tables,
    paper_tables,
    redacted_texts,
    source_lengths,
)
from .report import ALL_LABELS, COEFFICIENT_NAMES, HEADLINE_LABELS, PAPER_REFERENCE, agreement_report
from .scores import SCORE_DIMENSIONS
from .second_opinion import MAX_ITERATIONS, TASKS, annotator_rows, second_opinions, task_rows
from .selectors import analysis_labels, evaluators_of, label_source, task_votes
from .tables import clean, combination_rows, detection_rows, evaluator_means, evaluator_rows

DIMENSIONS = (*SCORE_DIMENSIONS, "composite")
SIMULATED = "simulated"
# The shape of what figures_compute stores, part of the basis: figures stored by code that drew the page differently
# are recomputed after an upgrade, never shown with fields missing. 2: agreement on the first two labels beside all
# labels, Dawid-Skene beside majority vote. 3: the paper's result tables. 4: tables 2 and 13, figure 3, each table's
# decimals.
FORMAT = 4


def figures_basis(project: Project, variant: str = "") -> dict:
    return {
        "format": FORMAT,
        "adjudication_in_aggregation": project.adjudication_in_aggregation,
        # Which sources are long (the context table) follows the project's threshold.
        "long_threshold_words": project.long_threshold_words,
        "submissions": fingerprints.counted_submissions(project),
        "adjudications": fingerprints.adjudications(project),
        "grades": fingerprints.grades(project),
        "hits": fingerprints.hits(project),
        **corpus_parts(project),
        "scores": EvaluatorScore.objects.filter(project=project).aggregate(
            n=Count("pk"), last=Max("pk"), changed=Max("updated")),
        "release": ReleaseLabels.objects.filter(project=project).aggregate(
            n=Count("pk"), last=Max("pk"), changed=Max("imported")),
        "jobs": data_jobs(project),
    }


def figures_job_compute(job: Job) -> dict:
    figures = figures_compute(job.project, include_simulated=job.params.get("variant") == SIMULATED)
    figures["summary"] = {"label_source": figures["source"]}
    return figures


def figures_compute(project: Project, *, include_simulated: bool) -> dict:
    """Everything the analytics page draws and every CSV's rows, as JSON (NaN becomes None)."""
    source = label_source(project, include_simulated=include_simulated)
    # Each task's votes read once, for agreement and for Dawid-Skene.
    votes = {task: task_votes(project, task, source) for task in TASKS}
    report = agreement_report(project, source=source, votes=votes)
    opinions = second_opinions(project, source, votes=votes)
    del votes
    data = project_analytics(project, source=source)
    names = evaluators_of(project)
    detection = detection_report(project, data, names)
    series = _progress_series(project, source)
    evaluators = {name: evaluator_rows(project, name, data) for name in names}
    second_opinion = {"tasks": task_rows(opinions), "annotators": annotator_rows(project, opinions)}
    page = {"agreement": _agreement_context(report), "n_boot": report.n_boot, "evaluators": names,
            "headline_labels": HEADLINE_LABELS, "all_labels": ALL_LABELS,
            "dawid_skene": _dawid_skene_context(second_opinion),
            "error_sentences": data.error_sentences,
            "corrections": _rates(data.corrections_judgments),
            "corrections_majority": _rates(data.corrections_majority),
            "progress_chart": plots.lines(series) if series else None}
    table = data.table()
    tables = _analytics_tables(data)
    paper = paper_tables(data, source_lengths(project), redacted_texts(project), report=report,
                         domains=domain_lengths(project))
    page["paper_tables"] = _paper_context(paper)
    page["paper_tables_missing"] = missing_tables(paper)
    tables.update({name: ({key: csv_rows(table) for key, table in value.items()} if name == "domain-table"
                          else csv_rows(value)) for name, value in paper.items()})
    if table is not None:
        page["heatmaps"] = {dimension: plots.heatmap(
            [str(i) for i in frame.index], [str(c) for c in frame.columns], frame.to_numpy().tolist())
            for dimension, frame in table.by_domain.items()}
        page["summarizers"] = tables["summarizers"]
    errors = data.error_types.get("model") or {}
    if errors:
        page["error_bars"] = plots.stacked_bars(errors)
        page["context_bars"] = plots.stacked_bars({**data.error_types["input_type"], **data.error_types["length"]})
    page.update(_evaluator_context(project, names, evaluators, detection, data))
    tables.update({
        "agreement": [row.flat() for row in report.rows],
        "dawid-skene": second_opinion["annotators"],
        "progress": [{"task": task, "day": day, "cumulative_labels": n}
                     for task, points in series.items() for day, n in points],
        "evaluators": [row for name in names for row in evaluators[name]],
        "evaluator": evaluators,
        "detection": detection_rows(detection),
        "detection-combinations": combination_rows(detection),
    })
    # PostgreSQL's jsonb keeps no key order, and a CSV's columns have one: each row is stored as [key, value] pairs.
    tables = {name: ({key: _pairs(rows) for key, rows in value.items()} if isinstance(value, dict) else _pairs(value))
              for name, value in tables.items()}
    return _json({"source": source, "page": page, "tables": tables})


def _pairs(rows: list[dict]) -> list[list]:
    return [list(row.items()) for row in rows]


def _progress_series(project: Project, source: str) -> dict[str, list[tuple[str, int]]]:
    """Cumulative counted labels per task and day of submission (per hour while the work fits in one day), in one
    grouped query: per task and hour, summed into days when the work spans more than one."""
    rows = list(analysis_labels(project, source).order_by()
                .values("unit__task", hour=TruncHour("assignment__submitted_at")).annotate(n=Count("pk"))
                .order_by("hour", "unit__task"))
    days = {None if row["hour"] is None else timezone.localtime(row["hour"]).date() for row in rows}
    counts: dict[tuple, int] = {}
    for row in rows:
        hour = row["hour"]
        if len(days) > 1:
            key = str(None if hour is None else timezone.localtime(hour).date())
        else:
            key = timezone.localtime(hour).strftime("%Y-%m-%d %H:00")
        counts[row["unit__task"], key] = counts.get((row["unit__task"], key), 0) + row["n"]
    series: dict[str, list[tuple[str, int]]] = {}
    for (task, day), n in counts.items():
        points = series.setdefault(task, [])
        points.append((day, (points[-1][1] if points else 0) + n))
    return series


def table_from(figures: dict, table: str, dimension: str = "composite") -> list[dict] | None:
    """One CSV's rows from stored figures; None for an unknown table."""
    tables = figures["tables"]
    if table.startswith("evaluator-"):
        rows = tables["evaluator"].get(table.removeprefix("evaluator-"), [])
    elif table in ("scores", "domain-table"):
        rows = tables.get(table, {}).get(dimension, [])
    elif table in tables:
        rows = tables[table]
    else:
        return None
    return [dict(pairs) for pairs in rows]


def _analytics_tables(data: Analytics) -> dict:
    """The CSV rows of the tables derived from an Analytics (the columns and rounding of exports.tables)."""
    frame = data.summarizer_table()
    score_table = data.table()
    return {
        "summarizers": [{"summarizer": model, **{k: clean(v) for k, v in values.items()}}
                        for model, values in frame.to_dict("index").items()],
        "scores": {dimension: [{"summarizer": model, **{str(k): clean(v) for k, v in values.items()}}
                               for model, values in score_table.by_domain[dimension].to_dict("index").items()]
                   for dimension in score_table.by_domain} if score_table is not None else {},
        "error-types": [{"group_by": group_by, "group": group, "error_type": name, "share": round(share, 4)}
                        for group_by, groups in data.error_types.items() for group, shares in groups.items()
                        for name, share in shares.items()],
        "corrections": [{"pairs": name, "ai_error": rates.ai_error, "ai_error_corrected": rates.ai_error_corrected,
                         "ai_error_correction_rate": clean(rates.ai_error_correction_rate),
                         "ai_no_error": rates.ai_no_error, "ai_no_error_corrected": rates.ai_no_error_corrected,
                         "ai_no_error_correction_rate": clean(rates.ai_no_error_correction_rate)}
                        for name, rates in (("per judgment", data.corrections_judgments),
                                            ("per sentence (majority)", data.corrections_majority))],
    }


def _paper_context(paper: dict) -> list[dict]:
    """The paper's tables as the page draws them, in exports.paper_tables.PAPER_TABLES' order. Each names its CSV
    (and, for tables 14-17, the dimension); figure 3's ranks are drawn too."""
    listed = []
    for name, value in paper.items():
        if name == "domain-table":
            listed += [(name, dimension, table) for dimension, table in value.items()]
        else:
            listed.append((name, "", value))
    return [{"csv": name, "dimension": dimension, "caption": table["caption"], "note": table["note"],
             "head": header_rows(table),
             "rows": [{"total": index >= len(table["rows"]) - table["total"],
                       "cells": [{"text": cell(value, digits), "num": position >= table["labels"]}
                                 for position, (value, digits) in enumerate(zip(row, table["decimals"]))]}
                      for index, row in enumerate(table["rows"])],
             "chart": _rank_chart(table) if name == "summarizer-ranks" else None}
            for name, dimension, table in listed]


def _rank_chart(table: dict) -> dict:
    """Figure 3 drawn: the summarizers down, the dimensions across, each cell its rank, darker for better."""
    return plots.rank_grid([str(row[0]) for row in table["rows"]], list(RANKED.values()),
                           [row[1:] for row in table["rows"]])


def _rates(rates) -> dict:
    return {"ai_error": rates.ai_error, "ai_error_corrected": rates.ai_error_corrected,
            "ai_no_error": rates.ai_no_error, "ai_no_error_corrected": rates.ai_no_error_corrected,
            "ai_error_correction_rate": rates.ai_error_correction_rate,
            "ai_no_error_correction_rate": rates.ai_no_error_correction_rate}


def _evaluator_context(project: Project, names: list[str], rows: dict, detection, data: Analytics) -> dict:
    """The evaluator benchmark: correlations (table and plot), sentence-level detection, combinations."""
    points = [{"label": f"{row['evaluator']} {row['dimension']}", "value": _nan(row["summary_pearson"]),
               "ci_low": _nan(row["summary_pearson_ci_low"]), "ci_high": _nan(row["summary_pearson_ci_high"]),
               "cls": f"series-{names.index(row['evaluator']) % plots.SERIES}",
               "title": f"{row['evaluator']} {row['dimension']}: Pearson {_fmt(_nan(row['summary_pearson']))} "
                        f"over {row['summary_n']} summaries"}
              for name in names for row in rows[name] if row["group_by"] == "overall"]
    single = list(detection.single)
    # SBERTScore paper, figure 1: the diagonal is each evaluator alone, above it OR, below it AND.
    matrix = [[_combination_cell(detection, a, b, i, j) for j, b in enumerate(single)] for i, a in enumerate(single)]
    return {
        "evaluator_tables": [{"name": name, "overall": [row for row in rows[name] if row["group_by"] == "overall"],
                              "groups": [row for row in rows[name] if row["group_by"] != "overall"],
                              "means": evaluator_means(project, name, data)}
                             for name in names],
        "human_scores": bool(data.has_scores),
        # Without a single defined correlation the chart would be a column of "undefined": the tables say why.
        "evaluator_chart": plots.intervals(points, low=-1.0, high=1.0)
        if any(not math.isnan(point["value"]) for point in points) else None,
        "detection_split": detection.split.describe(), "detection_rows": detection_rows(detection),
        "combination_rows": combination_rows(detection), "combination_matrix": list(zip(single, matrix)),
        "combination_names": single,
        "roc_chart": plots.roc_curves({name: list(result.roc) for name, result in detection.single.items()
                                       if result.roc}) if any(r.roc for r in detection.single.values()) else None,
    }


def _combination_cell(detection, a: str, b: str, i: int, j: int) -> dict:
    if a == b:
        return {"text": _fmt(detection.single[a].balanced_accuracy), "diagonal": True,
                "title": f"{a} alone: balanced accuracy on the test half"}
    rule = "or" if i < j else "and"
    result = detection.combined[(a, b) if a < b else (b, a)][rule]
    meaning = ("consistent when at least one says so" if rule == "or" else "consistent only when both say so")
    return {"text": _fmt(result.balanced_accuracy), "diagonal": False,
            "title": f"{a} {rule.upper()} {b} ({meaning}): balanced accuracy on {result.n_test} test sentences"}


def _agreement_context(report) -> list[dict]:
    tasks = []
    for task in (Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT):
        rows = report.for_task(task)
        if not rows:
            continue
        points = [{"label": "overall" if row.breakdown == "overall" else row.group, "value": row.primary.value,
                   "ci_low": row.primary.ci_low, "ci_high": row.primary.ci_high,
                   "cls": "series-1" if row.breakdown == "overall" else "series-0",
                   "title": f"{row.group}: {_fmt(row.primary.value)} ({row.n_units} units, first two labels each)"}
                  for row in rows if row.breakdown in ("overall", "domain")]
        table = [{"name": "overall" if row.breakdown == "overall" else f"{row.breakdown}: {row.group}",
                  "overall": row.breakdown == "overall", "n_units": row.n_units, "n_ratings": row.n_ratings,
                  "primary": _fmt(row.primary.value), "secondary": _fmt(row.secondary.value),
                  "interval": _interval(row.primary), "n_ratings_all": row.n_ratings_all,
                  "primary_all": _fmt(row.primary_all.value), "secondary_all": _fmt(row.secondary_all.value),
                  "interval_all": _interval(row.primary_all)} for row in rows]
        overall = next(row for row in rows if row.breakdown == "overall")
        tasks.append({"task": str(task), "label": task.label, "rows": table, "reference": PAPER_REFERENCE[task],
                      "primary": COEFFICIENT_NAMES[rows[0].primary.coefficient],
                      "secondary": COEFFICIENT_NAMES[rows[0].secondary.coefficient],
                      "headline": _fmt(overall.primary.value), "headline_interval": _interval(overall.primary),
                      "all_labels": _fmt(overall.primary_all.value),
                      "chart": plots.intervals(points, reference=PAPER_REFERENCE[task])})
    return tasks


def _interval(estimate) -> str:
    return "—" if math.isnan(estimate.ci_low) else f"[{_fmt(estimate.ci_low)}, {_fmt(estimate.ci_high)}]"


def _dawid_skene_context(second_opinion: dict) -> dict:
    """Per task: how often Dawid-Skene's label differs from the majority, how the EM ended, and its estimates per
    annotator beside their attention-check pass rate."""
    tasks = []
    for row in second_opinion["tasks"]:
        tasks.append({**row, "label": Task(row["task"]).label, "differs_percent": _percent(row["differs_share"]),
                      "annotators": [{**annotator, "check_pass_percent": _percent(annotator["check_pass_rate"])}
                                     for annotator in second_opinion["annotators"]
                                     if annotator["task"] == row["task"]]})
    return {"tasks": tasks, "max_iterations": MAX_ITERATIONS}


def _percent(share: float | None) -> float | None:
    return None if share is None else 100 * share


def _nan(value) -> float:
    return math.nan if value is None else value


def _fmt(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.3f}"


def _json(value):
    """JSON-ready: tuples become lists, NaN and infinities None (PostgreSQL's jsonb has no NaN), keys strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): _json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json(item) for item in value]
    if hasattr(value, "item") and not isinstance(value, str):  # NumPy scalars
        return _json(value.item())
    return value
