"""Importing an automatic evaluator's scores and benchmarking it against the human scores (paper 6, D.2).

File: CSV or JSONL, one row per summary keyed by `uid` + `model`, with one column per scored dimension among
faithfulness, completeness, conciseness, composite (at least one; empty/null = not scored). Any finite number
is accepted (a 1-5 Likert scale or a percentage): correlations do not depend on the scale. Validated like the
dataset import (annotation.importing): every problem is reported with its line and field, and nothing is written
if any row is bad. Importing again replaces that evaluator's scores for the summaries in the file.
"""

import csv
import io
import math

from django.db import transaction

from annotation.importing import DatasetError, RowError, decode, guess_format, read_jsonl
from annotation.models import Project, Summary

from .analytics import Analytics
from .evaluator_benchmark import EvaluatorBenchmark, benchmark_evaluator, rows_from_scores
from .models import EvaluatorScore

DIMENSIONS = ("faithfulness", "completeness", "conciseness", "composite")
KEYS = ("uid", "model")


def _rows(text: str, fmt: str, errors: list[RowError]):
    if fmt == "jsonl":
        # The dataset import's reader: the same messages for the same mistakes.
        for row in read_jsonl(text, errors):
            yield row.line, row.values
        return
    reader = csv.DictReader(io.StringIO(text, newline=""))
    for values in reader:
        yield reader.line_num, {key: (None if value == "" else value) for key, value in values.items()}


def _score(value, line: int, name: str, errors: list[RowError]) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        errors.append(RowError(line, name, f"must be a number, got {value!r}"))
        return None
    if isinstance(value, bool) or not math.isfinite(number):
        errors.append(RowError(line, name, f"must be a finite number, got {value!r}"))
        return None
    return number


def parse_scores(project: Project, data: bytes, filename: str) -> dict[int, dict]:
    """summary id -> {dimension: score}; raises DatasetError listing every problem."""
    text = decode(data)
    fmt = guess_format(filename)
    errors: list[RowError] = []
    summaries = {(uid, model): pk for pk, uid, model in Summary.objects.filter(document__project=project)
                 .values_list("pk", "document__uid", "model")}
    parsed: dict[int, dict] = {}
    seen: dict[tuple, int] = {}
    for line, values in _rows(text, fmt, errors):
        unknown = sorted(set(values) - set(KEYS) - set(DIMENSIONS))
        if unknown:
            errors.append(RowError(line, unknown[0], f"unknown column(s): {', '.join(unknown)}; use "
                                                     f"{', '.join(KEYS + DIMENSIONS)}"))
        for key in KEYS:
            if not isinstance(values.get(key), str) or not values[key].strip():
                errors.append(RowError(line, key, "missing required field"))
        if not any(name in values for name in DIMENSIONS):
            errors.append(RowError(line, "", f"no score column: give at least one of {', '.join(DIMENSIONS)}"))
        scores = {name: _score(values.get(name), line, name, errors) for name in DIMENSIONS if name in values}
        key = (values.get("uid"), values.get("model"))
        if not all(isinstance(part, str) and part for part in key):
            continue
        if key in seen:
            errors.append(RowError(line, "model", f"duplicate row: uid {key[0]!r} and model {key[1]!r} already on "
                                                  f"line {seen[key]}"))
            continue
        seen[key] = line
        if key not in summaries:
            errors.append(RowError(line, "uid", f"no summary of document {key[0]!r} by {key[1]!r} in this project"))
            continue
        parsed[summaries[key]] = scores
    if not seen and not errors:
        errors.append(RowError(0, "", "the file holds no rows"))
    if errors:
        raise DatasetError(sorted(errors, key=lambda error: (error.line, error.field)))
    return parsed


@transaction.atomic
def import_evaluator_scores(*, project: Project, evaluator: str, data: bytes, filename: str) -> int:
    """Validate the whole file, then store it; returns the number of summaries scored."""
    evaluator = evaluator.strip()
    if not evaluator:
        raise DatasetError([RowError(0, "", "the evaluator needs a name")])
    parsed = parse_scores(project, data, filename)
    EvaluatorScore.objects.filter(evaluator=evaluator, summary_id__in=parsed).delete()
    EvaluatorScore.objects.bulk_create([EvaluatorScore(project=project, summary_id=pk, evaluator=evaluator, **scores)
                                        for pk, scores in parsed.items()], batch_size=2000)
    return len(parsed)


def evaluators_of(project: Project) -> list[str]:
    return list(EvaluatorScore.objects.filter(project=project).order_by("evaluator")
                .values_list("evaluator", flat=True).distinct())


def benchmark(project: Project, evaluator: str, analytics: Analytics) -> dict[str, EvaluatorBenchmark]:
    """Per dimension: summary-level Pearson and system-level Spearman, overall and per domain."""
    summaries = analytics.summaries
    domains = dict(zip(summaries["uid"], summaries["domain"]))
    stored = list(EvaluatorScore.objects.filter(project=project, evaluator=evaluator)
                  .values("summary__document__uid", "summary__model", *DIMENSIONS))
    results = {}
    for dimension in DIMENSIONS:
        human = {(uid, model): (None if value != value else value)
                 for uid, model, value in zip(summaries["uid"], summaries["model"], summaries[dimension])}
        machine = {(row["summary__document__uid"], row["summary__model"]): row[dimension] for row in stored
                   if row[dimension] is not None}
        if machine:
            results[dimension] = benchmark_evaluator(rows_from_scores(human, machine, domains))
    return results
