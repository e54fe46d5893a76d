"""Importing an automatic evaluator's scores and benchmarking evaluators against the human labels (paper 6, D.2).

Scores computed by the platform's own runs (assist.evaluators) and imported ones live in the same table
(assist.models.EvaluatorScore) and are benchmarked alike; only runs give sentence-level scores.

File: CSV or JSONL, one row per summary keyed by `uid` + `model`, with one column per scored dimension among
faithfulness, completeness, conciseness, composite (at least one; empty/null = not scored). Any finite number
is accepted (a 1-5 Likert scale or a percentage): correlations do not depend on the scale. Validated like the
dataset import (corpus.importing): every problem is reported with its line and field, and nothing is written
if any row is bad. Importing again replaces that evaluator's scores for the summaries in the file.
"""

import csv
import dataclasses
import io
import math
import unicodedata

from django.db import transaction

from assist.evaluators import NAMES as BUILT_IN
from assist.models import EvaluatorScore, EvaluatorSentenceScore
from corpus.importing import DatasetError, RowError, decode, guess_format, read_jsonl
from corpus.models import Project, Summary
from corpus.storable_text import unstorable

from .analytics import Analytics
from .evaluator_benchmark import (
    Detection,
    DocumentSplit,
    EvaluatorBenchmark,
    SentenceScore,
    benchmark_evaluator,
    combined_detection,
    error_detection,
    rows_from_scores,
    split_documents,
)

DIMENSIONS = ("faithfulness", "completeness", "conciseness", "composite")
KEYS = ("uid", "model")


def _rows(text: str, fmt: str, errors: list[RowError]):
    if fmt == "jsonl":
        # The dataset import's reader: the same messages for the same mistakes.
        for row in read_jsonl(text, errors):
            yield row.line, row.values
        return
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        for values in reader:
            yield reader.line_num, {key: (None if value == "" else value) for key, value in values.items()}
    except csv.Error as exc:  # e.g. a cell over the csv module's field size limit
        errors.append(RowError(reader.line_num, "", f"unreadable CSV row ({exc})"))


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
        if None in values:  # csv.DictReader's key for the cells past the header's
            errors.append(RowError(line, "", "the row has more cells than the header"))
        unreadable = {key for key in values if key is not None and unstorable(key)}
        if unreadable:
            errors.append(RowError(line, "", f"a column name {unstorable(min(unreadable))}"))
        unknown = sorted(set(values) - set(KEYS) - set(DIMENSIONS) - unreadable - {None})
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


def evaluator_name(name: str) -> str:
    """The name as written, trimmed: spaces and punctuation are kept ("G-Eval (GPT-4)", as the UniSumEval release
    names its evaluators), since every page escapes it and every CSV neutralises it. Refused: an empty name, one
    over the column's length, and control characters (a line break would split a CSV row or a Markdown table's)."""
    name = name.strip()
    if not name:
        raise DatasetError([RowError(0, "", "the evaluator needs a name")])
    limit = EvaluatorScore._meta.get_field("evaluator").max_length
    if len(name) > limit:
        raise DatasetError([RowError(0, "", f"the evaluator's name is {len(name):,} characters; the limit is {limit}")])
    if problem := unstorable(name):
        raise DatasetError([RowError(0, "", f"the evaluator's name {problem}")])
    for position, character in enumerate(name, 1):
        if unicodedata.category(character).startswith("C"):
            raise DatasetError([RowError(0, "", f"the evaluator's name holds a control character "
                                                f"(U+{ord(character):04X}) at character {position}; write it on one "
                                                "line, with printable characters only")])
    return name


@transaction.atomic
def import_evaluator_scores(*, project: Project, evaluator: str, data: bytes, filename: str) -> int:
    """Validate the whole file, then store it; returns the number of summaries scored."""
    evaluator = evaluator_name(evaluator)
    if evaluator.lower() in BUILT_IN:
        raise DatasetError([RowError(0, "", f"{evaluator!r} is a built-in evaluator: run it (run_evaluator), or "
                                            "import these scores under another name")])
    parsed = parse_scores(project, data, filename)
    EvaluatorScore.objects.filter(evaluator=evaluator, summary_id__in=parsed).delete()
    EvaluatorScore.objects.bulk_create([EvaluatorScore(project=project, summary_id=pk, evaluator=evaluator,
                                                       origin=EvaluatorScore.Origin.IMPORTED, **scores)
                                        for pk, scores in parsed.items()], batch_size=2000)
    return len(parsed)



def benchmark(project: Project, evaluator: str, analytics: Analytics) -> dict[str, EvaluatorBenchmark]:
    """Per dimension: summary-level Pearson and Spearman, system-level Spearman; overall, per domain, per source."""
    summaries = analytics.summaries
    domains = dict(zip(summaries["uid"], summaries["domain"]))
    sources = dict(zip(summaries["uid"], summaries["source"]))
    stored = list(EvaluatorScore.objects.filter(project=project, evaluator=evaluator, status=EvaluatorScore.Status.OK)
                  .values("summary__document__uid", "summary__model", *DIMENSIONS))
    results = {}
    for dimension in DIMENSIONS:
        human = {(uid, model): (None if value != value else value)
                 for uid, model, value in zip(summaries["uid"], summaries["model"], summaries[dimension])}
        machine = {(row["summary__document__uid"], row["summary__model"]): row[dimension] for row in stored
                   if row[dimension] is not None}
        if machine:
            results[dimension] = benchmark_evaluator(rows_from_scores(human, machine, domains, sources))
    return results


def sentence_scores(project: Project, evaluator: str, analytics: Analytics) -> list[SentenceScore]:
    """The evaluator's sentence scores where the human fact-verification majority exists."""
    rows = (EvaluatorSentenceScore.objects
            .filter(evaluator_score__project=project, evaluator_score__evaluator=evaluator,
                    evaluator_score__status=EvaluatorScore.Status.OK, score__isnull=False)
            .values_list("summary_sentence_id", "summary_sentence__summary__document__uid",
                         "summary_sentence__summary__model", "summary_sentence__index", "score"))
    labels = analytics.sentence_labels
    scores = []
    for key, uid, model, index, score in rows.iterator(chunk_size=5000):
        label = labels.get((uid, model, index))
        if label is not None:
            scores.append(SentenceScore(document=uid, key=key, score=score, error=bool(label)))
    return scores


@dataclasses.dataclass(frozen=True)
class DetectionReport:
    split: DocumentSplit
    single: dict[str, Detection]  # Evaluators with sentence scores.
    combined: dict[tuple[str, str], dict[str, Detection]]  # (first, second) -> "and"/"or".


def detection_report(project: Project, analytics: Analytics, evaluators: list[str]) -> DetectionReport:
    """Sentence-level error detection of each evaluator with sentence scores, and of each pair combined.

    The split is over all the project's documents, so it does not depend on which evaluators ran."""
    split = split_documents(analytics.summaries["uid"].tolist())
    scored = {name: sentence_scores(project, name, analytics) for name in evaluators}
    scored = {name: sentences for name, sentences in scored.items() if sentences}
    names = sorted(scored)
    return DetectionReport(
        split=split, single={name: error_detection(scored[name], split) for name in names},
        combined={(a, b): combined_detection(scored[a], scored[b], split)
                  for i, a in enumerate(names) for b in names[i + 1:]})
