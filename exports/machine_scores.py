"""The evaluators' scores in the release's layout, read by the release import (exports.release) and written by the
export (exports.export), so that a study exported here reads as the release.

The UniSumEval release gives a summary's machine scores as one object per dimension,
`machine_evaluation_results_<dimension>` = {evaluator: score}, as its benchmark script reads them. The export writes
the same objects, with the composite beside the release's three dimensions, and for the evaluators that judge each
sentence (assist.models.EvaluatorSentenceScore) three objects of lists in the order of `sentences`, the way the
release lays out its human sentence labels:
- machine_evaluation_results_sentence_score: {evaluator: [score or null, per sentence]}
- machine_evaluation_results_sentence_label: {evaluator: [1 = error, 0 = none, null = no verdict]}
- machine_evaluation_results_sentence_error_type: {evaluator: [the evaluator's category or null]}

Reading, the release as published: names are kept as written ("SummaC Conv"); a null, NaN or absent score is a
missing value (the caller counts it), never a reason to refuse the file; an object may be the text of a JSON or
Python dict, `nan` included.
"""

import ast
import dataclasses
import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable

from assist.models import EvaluatorScore, EvaluatorSentenceScore
from corpus.models import Document, Project, SummarySentence
from corpus.storable_text import unstorable

DIMENSIONS = EvaluatorScore.DIMENSIONS
MACHINE = {dimension: f"machine_evaluation_results_{dimension}" for dimension in DIMENSIONS}
SENTENCE_SCORE = "machine_evaluation_results_sentence_score"
SENTENCE_LABEL = "machine_evaluation_results_sentence_label"
SENTENCE_ERROR_TYPE = "machine_evaluation_results_sentence_error_type"
SENTENCE_FIELDS = (SENTENCE_SCORE, SENTENCE_LABEL, SENTENCE_ERROR_TYPE)
FIELDS = (*MACHINE.values(), *SENTENCE_FIELDS)
NAME_LENGTH = EvaluatorScore._meta.get_field("evaluator").max_length
CATEGORY_LENGTH = EvaluatorSentenceScore._meta.get_field("category").max_length
# What a release writes for "no score" besides null and NaN.
MISSING_TEXT = {"", "nan", "none", "null", "n/a"}
Report = Callable[[str], None]


def name_problem(name: str) -> str | None:
    """Why an evaluator's name cannot be kept, or None. Spaces and punctuation are kept as written; only what would
    break where the name is shown is refused: a '/' (the name is part of its table's download address) and line
    breaks or other control characters (it is in that download's file name)."""
    if not name:
        return "an evaluator's name is empty"
    if problem := unstorable(name):
        return f"the evaluator's name {problem}"
    if len(name) > NAME_LENGTH:
        return f"the evaluator's name {name[:40]!r}... is {len(name):,} characters; the limit is {NAME_LENGTH}"
    if "/" in name:
        return f"the evaluator's name {name!r} cannot hold '/': it names the evaluator's table download"
    if any(ord(character) < 32 or ord(character) == 127 for character in name):
        return f"the evaluator's name {name!r} cannot hold a line break or another control character"
    return None


class _Literal(ast.NodeVisitor):
    """A Python literal made of dicts, lists, strings, numbers, None and the names nan/inf, which ast.literal_eval
    refuses but a release written with str(dict) holds. Nothing is ever evaluated."""

    NAMES = {"nan": math.nan, "NaN": math.nan, "inf": math.inf, "Infinity": math.inf, "None": None, "null": None,
             "True": True, "False": False}

    def read(self, node):
        if isinstance(node, ast.Expression):
            return self.read(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.NAMES:
            return self.NAMES[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.read(node.operand)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.read(item) for item in node.elts]
        if isinstance(node, ast.Dict) and None not in node.keys:
            return {self.read(key): self.read(value) for key, value in zip(node.keys, node.values)}
        raise ValueError("not a literal")


def read_object(value, report: Report) -> dict | None:
    """A dict, or the text of one (JSON, or a Python dict as str() writes it)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            try:
                value = _Literal().read(ast.parse(value.strip(), mode="eval"))
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                report("must be an object {evaluator: score} (or its text)")
                return None
    if not isinstance(value, dict):
        report(f"must be an object {{evaluator: score}}, got {type(value).__name__}")
        return None
    return value


def _number(value, what: str, report: Report) -> tuple[bool, float | None]:
    """(readable, score): a finite number, or None for a missing value (null, NaN, "NaN")."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True, None
    if isinstance(value, str) and value.strip().lower() in MISSING_TEXT:
        return True, None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        report(f"{what}: the score must be a finite number, or null or NaN when missing, got {value!r}")
        return False, None
    return True, float(value)


def _names(value: dict, report: Report):
    for raw, item in value.items():
        name = str(raw).strip()
        if problem := name_problem(name):
            report(problem)
        else:
            yield name, item


def summary_scores(value, report: Report) -> dict[str, float | None]:
    """{evaluator: score or None} of one `machine_evaluation_results_<dimension>` object."""
    value = read_object(value, report)
    if value is None:
        return {}
    scores = {}
    for name, item in _names(value, report):
        readable, score = _number(item, name, report)
        if readable:
            scores[name] = score
    return scores


def sentence_values(value, field: str, n: int, report: Report) -> dict[str, list]:
    """{evaluator: one entry per sentence} of one of the SENTENCE_FIELDS; None for a missing entry."""
    value = read_object(value, report)
    if value is None:
        return {}
    lists = {}
    for name, items in _names(value, report):
        if not isinstance(items, list) or len(items) != n:
            report(f"{name}: must be a list with one entry per sentence ({n})")
            continue
        entries = []
        for position, item in enumerate(items, start=1):
            what = f"{name}, sentence {position}"
            if field == SENTENCE_SCORE:
                readable, entry = _number(item, what, report)
            elif field == SENTENCE_LABEL:
                readable = item is None or isinstance(item, bool) or (isinstance(item, (int, float))
                                                                      and item in (0, 1))
                entry = int(item) if readable and item is not None else None
                if not readable:
                    report(f"{what}: must be 1 (error), 0 or null, got {item!r}")
            else:
                readable = item is None or (isinstance(item, str) and len(item) <= CATEGORY_LENGTH
                                            and not unstorable(item))
                entry = item or None
                if not readable:
                    report(f"{what}: must be a category of at most {CATEGORY_LENGTH} characters or null")
            if not readable:
                break
            entries.append(entry)
        else:
            lists[name] = entries
    return lists


class MachineScores:
    """A project's evaluator scores (the OK ones) as the export writes them, read a chunk of documents at a time in
    the export's order (domain, uid), so that memory stays bounded by the chunk."""

    def __init__(self, project: Project, chunk: int = 25):
        self.project, self.chunk = project, chunk
        self.uids = list(Document.objects.filter(project=project).order_by("domain", "uid")
                         .values_list("uid", flat=True))
        self.position = {uid: i for i, uid in enumerate(self.uids)}
        self.loaded: set[str] = set()
        self.summaries: dict[tuple[str, str], dict] = {}

    def _load(self, uid: str) -> None:
        start = self.position.get(uid, 0)
        uids = self.uids[start:start + self.chunk] if uid in self.position else [uid]
        self.loaded, self.summaries = set(uids), defaultdict(lambda: {field: {} for field in FIELDS})
        ok = EvaluatorScore.objects.filter(project=self.project, status=EvaluatorScore.Status.OK,
                                           summary__document__uid__in=uids)
        for row in ok.values("summary__document__uid", "summary__model", "evaluator", *DIMENSIONS):
            fields = self.summaries[row["summary__document__uid"], row["summary__model"]]
            for dimension in DIMENSIONS:
                if row[dimension] is not None:
                    fields[MACHINE[dimension]][row["evaluator"]] = row[dimension]
        sentences = (EvaluatorSentenceScore.objects.filter(evaluator_score__in=ok)
                     .values_list("evaluator_score__summary__document__uid", "evaluator_score__summary__model",
                                  "evaluator_score__evaluator", "summary_sentence__index", "score", "error",
                                  "category"))
        for document, model, evaluator, index, score, error, category in sentences:
            fields = self.summaries[document, model]
            for field, entry in ((SENTENCE_SCORE, score), (SENTENCE_LABEL, None if error is None else int(error)),
                                 (SENTENCE_ERROR_TYPE, category or None)):
                fields[field].setdefault(evaluator, {})[index] = entry

    def fields(self, uid: str, model: str, n_sentences: int) -> dict:
        """The FIELDS of one summary: {} objects when it has no score; sentence lists of `n_sentences` entries."""
        if uid not in self.loaded:
            self._load(uid)
        stored = self.summaries.get((uid, model)) or {field: {} for field in FIELDS}
        out = {field: dict(stored[field]) for field in MACHINE.values()}
        for field in SENTENCE_FIELDS:
            out[field] = {evaluator: [by_index.get(i) for i in range(n_sentences)]
                          for evaluator, by_index in sorted(stored[field].items())}
        for field in MACHINE.values():
            out[field] = dict(sorted(out[field].items()))
        return out


@dataclasses.dataclass
class ImportedScores:
    """What a file gives for one summary: per dimension {evaluator: score or None}, per sentence field
    {evaluator: entries}."""

    summary_id: int
    machine: dict[str, dict[str, float | None]]
    sentences: dict[str, dict[str, list]]
    n_sentences: int


def store_imported_scores(*, project: Project, summaries: list[ImportedScores], release: str):
    """Imported evaluator scores: a row per evaluator and summary that has a score (per summary or per sentence).
    Returns, per evaluator, the summaries with a score per dimension it scores somewhere in the file, the summaries
    without one (the same dimensions), and its sentences judged."""
    scores: dict[tuple[str, int], dict] = {}
    dimensions_of: dict[str, set[str]] = defaultdict(set)
    for summary in summaries:
        for dimension, by_evaluator in summary.machine.items():
            for name, value in by_evaluator.items():
                dimensions_of[name].add(dimension)
                if value is not None:
                    scores.setdefault((name, summary.summary_id), {})[dimension] = value
        for by_evaluator in summary.sentences.values():
            for name in by_evaluator:
                scores.setdefault((name, summary.summary_id), {})
    EvaluatorScore.objects.bulk_create([
        EvaluatorScore(project=project, summary_id=summary_id, evaluator=name, origin=EvaluatorScore.Origin.IMPORTED,
                       details={"release": release}, **dimensions)
        for (name, summary_id), dimensions in scores.items()], batch_size=2000)
    counted = Counter((name, dimension) for (name, _), values in scores.items() for dimension in values)
    scored, missing = {}, {}
    for name in sorted(dimensions_of, key=str.casefold):
        scored[name] = {dimension: counted[name, dimension] for dimension in DIMENSIONS
                        if dimension in dimensions_of[name]}
        if gaps := {dimension: len(summaries) - count for dimension, count in scored[name].items()
                    if count < len(summaries)}:
            missing[name] = gaps
    return scored, missing, _store_sentences(project, summaries)


def _store_sentences(project: Project, summaries: list[ImportedScores]) -> dict[str, int]:
    score_ids = {(name, summary_id): pk for pk, name, summary_id in EvaluatorScore.objects.filter(project=project)
                 .values_list("pk", "evaluator", "summary_id")}
    sentence_ids = {(summary_id, index): pk for pk, summary_id, index in SummarySentence.objects.filter(
        summary__document__project=project).values_list("pk", "summary_id", "index")}
    rows, judged = [], Counter()
    for summary in summaries:
        names = {name for by_evaluator in summary.sentences.values() for name in by_evaluator}
        for name in sorted(names):
            entries = zip(*(summary.sentences.get(field, {}).get(name) or [None] * summary.n_sentences
                            for field in SENTENCE_FIELDS))
            for index, (score, label, category) in enumerate(entries):
                if score is None and label is None and category is None:
                    continue
                rows.append(EvaluatorSentenceScore(
                    evaluator_score_id=score_ids[name, summary.summary_id],
                    summary_sentence_id=sentence_ids[summary.summary_id, index],
                    score=score, error=None if label is None else bool(label), category=category or ""))
                judged[name] += 1
    EvaluatorSentenceScore.objects.bulk_create(rows, batch_size=2000)
    return dict(judged)
