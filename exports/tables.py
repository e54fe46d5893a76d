"""The analytics tables the pages draw and offer as CSV, computed once and cached until the labels change."""

import hashlib
import math

from django.core.cache import cache
from django.db.models import Count, Max
from django.db.models.functions import TruncDate, TruncHour

from assist.evaluators import dimension_sources
from assist.models import EvaluatorScore
from corpus.models import Project

from .analytics import Analytics, project_analytics
from .evaluators import DIMENSIONS as EVALUATOR_DIMENSIONS
from .evaluators import DetectionReport, benchmark, detection_report
from .models import ReleaseLabels
from .report import AgreementReport, agreement_report
from .second_opinion import annotator_rows, second_opinions
from .selectors import analysis_labels, evaluators_of

TABLES = ("agreement", "dawid-skene", "summarizers", "scores", "error-types", "corrections", "progress", "evaluators",
          "detection", "detection-combinations")
CACHE_SECONDS = 3600


def _state(project: Project, source: str) -> str:
    """Changes whenever a counted label, a grade, an evaluator score or a release's labels change: the cache key's
    version."""
    labels = analysis_labels(project, source).aggregate(n=Count("pk"), last=Max("updated_at"))
    scores = EvaluatorScore.objects.filter(project=project).aggregate(n=Count("pk"), last=Max("updated"))
    release = ReleaseLabels.objects.filter(project=project).aggregate(n=Count("pk"), last=Max("imported"))
    state = f"{labels['n']}-{labels['last']}-{scores['n']}-{scores['last']}-{release['n']}-{release['last']}"
    return hashlib.sha256(state.encode()).hexdigest()[:16]


def cached_analytics(project: Project, source: str) -> Analytics:
    key = f"exports:analytics:{project.pk}:{source}:{_state(project, source)}"
    return cache.get_or_set(key, lambda: project_analytics(project, source=source), CACHE_SECONDS)


def cached_report(project: Project, source: str) -> AgreementReport:
    key = f"exports:agreement:{project.pk}:{source}:{_state(project, source)}"
    return cache.get_or_set(key, lambda: agreement_report(project, source=source), CACHE_SECONDS)


def _clean(value):
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 4)
    return value


def progress_series(project: Project, source: str) -> dict[str, list[tuple[str, int]]]:
    """Cumulative counted labels per task and day of submission (per hour while the work fits in one day)."""
    labels = analysis_labels(project, source).order_by()
    days = labels.values(day=TruncDate("assignment__submitted_at")).distinct()[:2].count()
    trunc = TruncDate("assignment__submitted_at") if days > 1 else TruncHour("assignment__submitted_at")
    rows = labels.values("unit__task", day=trunc).annotate(n=Count("pk")).order_by("day")
    series: dict[str, list[tuple[str, int]]] = {}
    totals: dict[str, int] = {}
    for row in rows:
        task = row["unit__task"]
        totals[task] = totals.get(task, 0) + row["n"]
        day = row["day"] if days > 1 else row["day"].strftime("%Y-%m-%d %H:00")
        series.setdefault(task, []).append((str(day), totals[task]))
    return series


# The columns of the tables that can be empty (no evaluator scores yet), so that their CSV keeps its header.
EVALUATOR_COLUMNS = ("evaluator", "dimension", "evaluator_score", "group_by", "group", "summary_pearson",
                     "summary_pearson_p", "summary_pearson_ci_low", "summary_pearson_ci_high", "summary_spearman",
                     "summary_spearman_p", "summary_n", "system_spearman", "system_p", "system_n", "note")
DETECTION_COLUMNS = ("evaluator", "split", "threshold", "validation_sentences", "validation_balanced_accuracy",
                     "test_sentences", "balanced_accuracy", "roc_auc", "tn", "fp", "fn", "tp", "note")
COMBINATION_COLUMNS = ("first", "second", "rule", "first_balanced_accuracy", "second_balanced_accuracy",
                       "balanced_accuracy", "test_sentences", "tn", "fp", "fn", "tp", "note")


def table_columns(table: str) -> tuple[str, ...] | None:
    """The header of a table whose columns do not depend on its rows; None for the others."""
    if table == "evaluators" or table.startswith("evaluator-"):
        return EVALUATOR_COLUMNS
    return {"detection": DETECTION_COLUMNS, "detection-combinations": COMBINATION_COLUMNS}.get(table)


def evaluator_rows(project: Project, source: str, evaluator: str, analytics: Analytics | None = None) -> list[dict]:
    """Summary-level Pearson and Spearman and system-level Spearman of one evaluator, per dimension: overall, per
    domain and per source dataset."""
    results = benchmark(project, evaluator, analytics or cached_analytics(project, source))
    named = dimension_sources(evaluator)
    rows = []
    for dimension in EVALUATOR_DIMENSIONS:
        if dimension not in results:
            continue
        result = results[dimension]
        groups = [("overall", "overall", result.overall), *[("domain", name, levels) for name, levels in
                                                            result.by_domain.items()],
                  *[("source", name, levels) for name, levels in result.by_source.items()]]
        for group_by, group, levels in groups:
            pearson, spearman, system = levels.summary_level, levels.summary_level_spearman, levels.system_level
            rows.append({"evaluator": evaluator, "dimension": dimension, "evaluator_score": named.get(dimension, ""),
                         "group_by": group_by, "group": group,
                         "summary_pearson": _clean(pearson.statistic), "summary_pearson_p": _clean(pearson.p_value),
                         "summary_pearson_ci_low": _clean(pearson.ci_low),
                         "summary_pearson_ci_high": _clean(pearson.ci_high),
                         "summary_spearman": _clean(spearman.statistic), "summary_spearman_p": _clean(spearman.p_value),
                         "summary_n": pearson.n, "system_spearman": _clean(system.statistic),
                         "system_p": _clean(system.p_value), "system_n": system.n,
                         "note": pearson.reason or system.reason})
    return rows


def evaluator_means(project: Project, evaluator: str, analytics: Analytics) -> dict:
    """Per summarizer, the evaluator's mean score per dimension it gives, beside the human mean of the same
    summaries: what the system-level correlation ranks, and all there is to read before any human label."""
    stored = list(EvaluatorScore.objects.filter(project=project, evaluator=evaluator, status=EvaluatorScore.Status.OK)
                  .values_list("summary__document__uid", "summary__model", *EVALUATOR_DIMENSIONS))
    dimensions = [name for i, name in enumerate(EVALUATOR_DIMENSIONS) if any(row[2 + i] is not None for row in stored)]
    human = {(uid, model): row for uid, model, row in zip(analytics.summaries["uid"], analytics.summaries["model"],
                                                          analytics.summaries.to_dict("records"))}
    by_model: dict[str, list] = {}
    for row in stored:
        by_model.setdefault(row[1], []).append(row)
    rows = []
    for model in sorted(by_model, key=str):
        cells = []
        for dimension in dimensions:
            i = 2 + EVALUATOR_DIMENSIONS.index(dimension)
            machine = [row[i] for row in by_model[model] if row[i] is not None]
            people = [human[row[0], row[1]][dimension] for row in by_model[model] if row[i] is not None
                      and (row[0], row[1]) in human and not math.isnan(human[row[0], row[1]][dimension])]
            cells += [sum(machine) / len(machine) if machine else None, sum(people) / len(people) if people else None]
        rows.append({"summarizer": model, "summaries": len(by_model[model]), "cells": cells})
    return {"dimensions": dimensions, "rows": rows}


def cached_detection(project: Project, source: str) -> DetectionReport:
    key = f"exports:detection:{project.pk}:{source}:{_state(project, source)}"
    return cache.get_or_set(key, lambda: detection_report(project, cached_analytics(project, source),
                                                          evaluators_of(project)), CACHE_SECONDS)


def detection_rows(report: DetectionReport) -> list[dict]:
    return [{"evaluator": name, "split": report.split.describe(), "threshold": _clean(result.threshold),
             "validation_sentences": result.n_validation,
             "validation_balanced_accuracy": _clean(result.validation_balanced_accuracy),
             "test_sentences": result.n_test, "balanced_accuracy": _clean(result.balanced_accuracy),
             "roc_auc": _clean(result.roc_auc), "tn": result.tn, "fp": result.fp, "fn": result.fn, "tp": result.tp,
             "note": result.reason}
            for name, result in report.single.items()]


def evaluator_benchmark_tables(project: Project, analytics: Analytics) -> dict:
    """Everything the analytics page shows about evaluators, as the benchmark export writes it."""
    names = evaluators_of(project)
    report = detection_report(project, analytics, names)
    return {
        "label_source": analytics.label_source,
        "summary_level": [row for name in names
                          for row in evaluator_rows(project, analytics.label_source, name, analytics)],
        "sentence_level": {"split": {"seed": report.split.seed, "description": report.split.describe(),
                                     "validation_documents": sorted(map(str, report.split.validation)),
                                     "test_documents": sorted(map(str, report.split.test))},
                           "detection": detection_rows(report), "combinations": combination_rows(report)},
    }


def combination_rows(report: DetectionReport) -> list[dict]:
    rows = []
    for (first, second), results in report.combined.items():
        for rule, result in results.items():
            rows.append({"first": first, "second": second, "rule": rule.upper(),
                         "first_balanced_accuracy": _clean(report.single[first].balanced_accuracy),
                         "second_balanced_accuracy": _clean(report.single[second].balanced_accuracy),
                         "balanced_accuracy": _clean(result.balanced_accuracy), "test_sentences": result.n_test,
                         "tn": result.tn, "fp": result.fp, "fn": result.fn, "tp": result.tp, "note": result.reason})
    return rows


def table_rows(project: Project, source: str, table: str, dimension: str = "composite") -> list[dict] | None:
    """The rows of one table (CSV download and page tables); None for an unknown table."""
    if table == "agreement":
        return [row.flat() for row in cached_report(project, source).rows]
    if table == "dawid-skene":
        return annotator_rows(project, second_opinions(project, source))
    if table.startswith("evaluator-"):
        return evaluator_rows(project, source, table.removeprefix("evaluator-"))
    if table == "evaluators":
        return [row for name in evaluators_of(project) for row in evaluator_rows(project, source, name)]
    if table == "detection":
        return detection_rows(cached_detection(project, source))
    if table == "detection-combinations":
        return combination_rows(cached_detection(project, source))
    if table == "progress":
        return [{"task": task, "day": day, "cumulative_labels": n}
                for task, points in progress_series(project, source).items() for day, n in points]
    data = cached_analytics(project, source)
    if table == "summarizers":
        frame = data.summarizer_table()
        return [{"summarizer": model, **{k: _clean(v) for k, v in values.items()}}
                for model, values in frame.to_dict("index").items()]
    if table == "scores":
        score_table = data.table()
        if score_table is None or dimension not in score_table.by_domain:
            return []
        frame = score_table.by_domain[dimension]
        return [{"summarizer": model, **{str(k): _clean(v) for k, v in values.items()}}
                for model, values in frame.to_dict("index").items()]
    if table == "error-types":
        return [{"group_by": group_by, "group": group, "error_type": name, "share": round(share, 4)}
                for group_by, groups in data.error_types.items() for group, shares in groups.items()
                for name, share in shares.items()]
    if table == "corrections":
        return [{"pairs": name, "ai_error": rates.ai_error, "ai_error_corrected": rates.ai_error_corrected,
                 "ai_error_correction_rate": _clean(rates.ai_error_correction_rate),
                 "ai_no_error": rates.ai_no_error, "ai_no_error_corrected": rates.ai_no_error_corrected,
                 "ai_no_error_correction_rate": _clean(rates.ai_no_error_correction_rate)}
                for name, rates in (("per judgment", data.corrections_judgments),
                                    ("per sentence (majority)", data.corrections_majority))]
    return None
