"""The rows of the analytics tables the pages draw and offer as CSV (exports.figures stores them for every CSV)."""

import math

from assist.evaluators import dimension_sources
from assist.models import EvaluatorScore
from corpus.models import Project

from .analytics import Analytics
from .evaluators import DIMENSIONS as EVALUATOR_DIMENSIONS
from .evaluators import DetectionReport, benchmark, detection_report
from .selectors import evaluators_of

TABLES = ("agreement", "dawid-skene", "summarizers", "scores", "error-types", "corrections", "progress", "evaluators",
          "detection", "detection-combinations")


def clean(value):
    """A number as the CSVs give it: four decimals, NaN as empty."""
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 4)
    return value


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


def evaluator_rows(project: Project, evaluator: str, analytics: Analytics) -> list[dict]:
    """Summary-level Pearson and Spearman and system-level Spearman of one evaluator, per dimension: overall, per
    domain and per source dataset."""
    results = benchmark(project, evaluator, analytics)
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
                         "summary_pearson": clean(pearson.statistic), "summary_pearson_p": clean(pearson.p_value),
                         "summary_pearson_ci_low": clean(pearson.ci_low),
                         "summary_pearson_ci_high": clean(pearson.ci_high),
                         "summary_spearman": clean(spearman.statistic), "summary_spearman_p": clean(spearman.p_value),
                         "summary_n": pearson.n, "system_spearman": clean(system.statistic),
                         "system_p": clean(system.p_value), "system_n": system.n,
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


def detection_rows(report: DetectionReport) -> list[dict]:
    return [{"evaluator": name, "split": report.split.describe(), "threshold": clean(result.threshold),
             "validation_sentences": result.n_validation,
             "validation_balanced_accuracy": clean(result.validation_balanced_accuracy),
             "test_sentences": result.n_test, "balanced_accuracy": clean(result.balanced_accuracy),
             "roc_auc": clean(result.roc_auc), "tn": result.tn, "fp": result.fp, "fn": result.fn, "tp": result.tp,
             "note": result.reason}
            for name, result in report.single.items()]


def evaluator_benchmark_tables(project: Project, analytics: Analytics) -> dict:
    """Everything the analytics page shows about evaluators, as the benchmark export writes it."""
    names = evaluators_of(project)
    report = detection_report(project, analytics, names)
    return {
        "label_source": analytics.label_source,
        "summary_level": [row for name in names
                          for row in evaluator_rows(project, name, analytics)],
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
                         "first_balanced_accuracy": clean(report.single[first].balanced_accuracy),
                         "second_balanced_accuracy": clean(report.single[second].balanced_accuracy),
                         "balanced_accuracy": clean(result.balanced_accuracy), "test_sentences": result.n_test,
                         "tn": result.tn, "fp": result.fp, "fn": result.fn, "tp": result.tp, "note": result.reason})
    return rows
