"""Importing the UniSumEval release as published (its README): a reference project to benchmark evaluators on.

The release is two JSONL files with one row per summary, keyed by `uid` + `model`:
- unisumeval_faithfulness.jsonl: the metadata (uid, doc_id, source, domain, length, input_type, redact_type, model,
  reference, summary, sentences), the majority fact-verification label per sentence (1 = error), the error types,
  faithfulness_score, and the evaluators' scores as `machine_evaluation_results_faithfulness` = {evaluator: score};
- unisumeval_keyfact.jsonl: the same metadata, the candidate key-facts (pred_keyfact) with their validation labels,
  the human key-facts (keyfact) with their majority alignment label (keyfact_label), sentence_label, completeness,
  conciseness, and `machine_evaluation_results_completeness` / `_conciseness`.
Both carry `summary_success_state`. The source text is read from `input_context` (or `document`, the name the
platform's own export uses); a row without it cannot become a document and is refused.

What becomes of it:
- documents, summaries (with the release's sentences, never re-split) and key-facts go through the dataset import
  (corpus.importing: the same checks); a candidate key-fact is accepted when it is among the human key-facts, else
  rejected, so that FineSurE aligns the human ones;
- the majority labels and human scores are stored as such (exports.models.ReleaseLabels), marked with the release's
  name, never as annotators' labels: the analytics read them under the label source "release";
- the machine scores become imported evaluator scores (assist.models.EvaluatorScore), one evaluator per key of the
  `machine_evaluation_results_<dimension>` objects;
- a summary whose `summary_success_state` is not "success" (in either file) is left out of all of this, as the
  release's own benchmark script leaves it out; the result counts them.
Everything is checked before anything is written, and written in one transaction: a file with a problem imports
nothing, and every problem is reported with its file, line and field.
"""

import ast
import dataclasses
import json
import math
from collections import defaultdict

from django.db import transaction

from assist.evaluators import NAMES as BUILT_IN
from assist.models import EvaluatorScore
from corpus.importing import INPUT_TYPES, LENGTHS, DatasetError, RowError, decode, import_dataset, read_jsonl
from corpus.models import Document, KeyFact, Project, Summary
from corpus.storable_text import unstorable

from .evaluators import EVALUATOR_NAME
from .models import ReleaseLabels

FAITHFULNESS_FILE = "unisumeval_faithfulness.jsonl"
KEYFACT_FILE = "unisumeval_keyfact.jsonl"
SUCCESS = "success"
STATE = "summary_success_state"
METADATA = ("uid", "doc_id", "source", "domain", "length", "input_type", "redact_type", "model", "reference",
            "summary", "sentences")
SOURCE_TEXT = ("input_context", "document")
MACHINE = {"faithfulness": "machine_evaluation_results_faithfulness",
           "completeness": "machine_evaluation_results_completeness",
           "conciseness": "machine_evaluation_results_conciseness"}
FAITHFULNESS_LABELS = ("fact_verification_label", "fact_verification_error_type", "faithfulness_score")
KEYFACT_LABELS = ("pred_keyfact", "keyfact_validation_label", "keyfact", "keyfact_label", "completeness",
                  "sentence_label", "conciseness")
KNOWN = {*METADATA, *SOURCE_TEXT, *MACHINE.values(), *FAITHFULNESS_LABELS, *KEYFACT_LABELS, STATE}
# What each file must give for a summary it marks a success.
REQUIRED = {
    FAITHFULNESS_FILE: ("fact_verification_label", "faithfulness_score"),
    KEYFACT_FILE: ("keyfact", "keyfact_label", "completeness", "sentence_label", "conciseness"),
}
REQUIRED_METADATA = ("doc_id", "source", "domain", "input_type", "summary", "sentences")
DOCUMENT_LABELS = ("pred_keyfact", "keyfact_validation_label", "keyfact")  # Per document: equal on all its rows.


@dataclasses.dataclass(frozen=True)
class ReleaseRowError(RowError):
    """A problem at a line of one of the two files (line 0: the file as a whole)."""

    file: str = ""

    def __str__(self) -> str:
        where = ", ".join(part for part in (self.file, f"line {self.line}" if self.line else "",
                                             f"field '{self.field}'" if self.field else "") if part)
        return f"{where}: {self.message}" if where else self.message


@dataclasses.dataclass
class ReleaseImport:
    documents: int = 0
    summaries: int = 0
    keyfacts: int = 0
    left_out: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # Not a success: (uid, model).
    evaluators: dict[str, int] = dataclasses.field(default_factory=dict)  # name -> summaries scored
    ignored_fields: list[str] = dataclasses.field(default_factory=list)  # Fields the release has and we do not read.

    def __str__(self) -> str:
        evaluators = ", ".join(f"{name} ({count})" for name, count in self.evaluators.items()) or "none"
        return (f"{self.documents} documents, {self.summaries} summaries with their release labels, "
                f"{self.keyfacts} key-facts; {len(self.left_out)} summaries left out (summary_success_state is "
                f"not 'success'); evaluator scores: {evaluators}")


class _Checker:
    """Collects every problem of the two files instead of stopping at the first."""

    def __init__(self):
        self.errors: list[ReleaseRowError] = []

    def add(self, file: str, line: int, field: str, message: str) -> None:
        self.errors.append(ReleaseRowError(line, field, message, file))

    def raise_if_any(self) -> None:
        if self.errors:
            raise DatasetError(sorted(self.errors, key=lambda e: (e.file != FAITHFULNESS_FILE, e.file, e.line,
                                                                   e.field)))


def _read(name: str, data: bytes, check: _Checker) -> dict[tuple[str, str], tuple[int, dict]]:
    """(uid, model) -> (line, row) of one file."""
    try:
        text = decode(data)
    except DatasetError as exc:
        for error in exc.errors:
            check.add(name, error.line, error.field, error.message)
        return {}
    errors: list[RowError] = []
    rows: dict[tuple[str, str], tuple[int, dict]] = {}
    for row in read_jsonl(text, errors):
        values = row.values
        for key in ("uid", "model", STATE):
            if not isinstance(values.get(key), str) or not values[key].strip():
                check.add(name, row.line, key, "missing required field" if values.get(key) is None
                          else "must be a non-empty string")
        uid, model = values.get("uid"), values.get("model")
        if not (isinstance(uid, str) and isinstance(model, str) and uid.strip() and model.strip()):
            continue
        if (uid, model) in rows:
            check.add(name, row.line, "model", f"duplicate row: uid {uid!r} and model {model!r} already on line "
                                               f"{rows[uid, model][0]}")
            continue
        rows[uid, model] = (row.line, values)
    for error in errors:
        check.add(name, error.line, error.field, error.message)
    if not rows and not errors:
        check.add(name, 0, "", "the file holds no rows")
    return rows


def _sentences(value, report) -> list[str] | None:
    """A list of strings, or that list JSON-encoded in a string (both occur in releases)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            report("must be a list of sentences (or that list as a JSON string)")
            return None
    if not isinstance(value, list) or not value or not all(isinstance(s, str) and s.strip() for s in value):
        report("must be a non-empty list of non-empty strings")
        return None
    return value


def _flags(value, n: int | None, report, what: str) -> list[int] | None:
    """0/1 labels, one per item (`n` items; None: any number). A missing list is reported as a missing field."""
    if value is None:
        return None
    if not isinstance(value, list):
        report(f"must be a list of 0/1 labels, one per {what}")
        return None
    flags = []
    for position, item in enumerate(value, start=1):
        if isinstance(item, bool) or (isinstance(item, (int, float)) and item in (0, 1)):
            flags.append(int(item))
        else:
            report(f"item {position} must be 0 or 1, got {item!r}")
            return None
    if n is not None and len(flags) != n:
        report(f"has {len(flags)} labels for {n} {what}s")
        return None
    return flags


def _score(value, report) -> float | None:
    """A human score in [0, 1], or null."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        report(f"must be a number from 0 to 1 or null, got {value!r}")
        return None
    if not 0 <= value <= 1:
        report(f"must be from 0 to 1, got {value!r}")
        return None
    return float(value)


def _error_types(value, n: int, report) -> list[list[str]]:
    """Per sentence, the error types as a list of names (a name alone, a list of names or null per sentence)."""
    if value is None:
        return [[] for _ in range(n)]
    if not isinstance(value, list) or len(value) != n:
        report(f"must be a list with one entry per sentence ({n})")
        return [[] for _ in range(n)]
    types = []
    for position, item in enumerate(value, start=1):
        if item is None or item == "":
            types.append([])
        elif isinstance(item, str):
            types.append([item])
        elif isinstance(item, list) and all(isinstance(name, str) for name in item):
            types.append([name for name in item if name])
        else:
            report(f"entry {position} must be an error type, a list of them or null, got {item!r}")
            types.append([])
    return types


def _machine_scores(value, report) -> dict[str, float | None]:
    """{evaluator: score}; releases also write it as the text of a Python or JSON object."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(value)  # Literals only: never evaluates code.
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                report("must be an object {evaluator: score} (or its text)")
                return {}
    if not isinstance(value, dict):
        report(f"must be an object {{evaluator: score}}, got {type(value).__name__}")
        return {}
    scores = {}
    for name, score in value.items():
        name = str(name).strip()
        if problem := unstorable(name):
            report(f"an evaluator's name {problem}")
        elif not EVALUATOR_NAME.fullmatch(name):
            report(f"the evaluator's name {name!r} must be 1 to 100 letters, digits and . _ - + : @")
        elif name.lower() in BUILT_IN:
            report(f"{name!r} is the name of a built-in evaluator: the release's scores cannot take it")
        elif score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                                    or not math.isfinite(score)):
            report(f"{name}: the score must be a finite number or null, got {score!r}")
        else:
            scores[name] = None if score is None else float(score)
    return scores


def _choice(value, choices: set[str], report) -> str | None:
    """The release writes "Non-Dialogue", "Short": the platform's choices are lower case with hyphens."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        report(f"must be a string, got {type(value).__name__}")
        return None
    normal = "-".join(value.strip().lower().replace("_", " ").replace("-", " ").split())
    if normal not in choices:
        report(f"must be one of {', '.join(sorted(choices))} (any case), got {value!r}")
        return None
    return normal


@dataclasses.dataclass
class _Summary:
    uid: str
    model: str
    line: int  # In the faithfulness file.
    corpus: dict
    labels: dict
    machine: dict[str, dict[str, float | None]]  # dimension -> evaluator -> score


def _merge(key, faithfulness: tuple[int, dict], keyfact: tuple[int, dict], check: _Checker) -> _Summary | None:
    uid, model = key
    (f_line, f_row), (k_line, k_row) = faithfulness, keyfact
    found = len(check.errors)

    def reporter(file, line, field):
        return lambda message: check.add(file, line, field, message)

    for file, line, row in ((FAITHFULNESS_FILE, f_line, f_row), (KEYFACT_FILE, k_line, k_row)):
        for name in REQUIRED[file]:
            if name not in row:
                check.add(file, line, name, "missing required field")
    # Metadata: from either file; where both give a field, they must agree.
    values = {}
    for name in (*METADATA, *SOURCE_TEXT):
        given = [(file, line, row[name]) for file, line, row in ((FAITHFULNESS_FILE, f_line, f_row),
                                                                 (KEYFACT_FILE, k_line, k_row))
                 if row.get(name) is not None]
        if name == "sentences":
            given = [(file, line, _sentences(value, reporter(file, line, name))) for file, line, value in given]
            given = [item for item in given if item[2] is not None]
        if len(given) == 2 and given[0][2] != given[1][2]:
            check.add(KEYFACT_FILE, k_line, name, f"differs from line {f_line} of {FAITHFULNESS_FILE} for uid "
                                                  f"{uid!r} and model {model!r}")
        if given:
            values[name] = given[0][2]
    for name in REQUIRED_METADATA:
        if name not in values:
            check.add(FAITHFULNESS_FILE, f_line, name, f"missing required field (in both files of uid {uid!r})")
    text = values.get("input_context", values.get("document"))
    if text is None:
        check.add(FAITHFULNESS_FILE, f_line, "input_context", "missing: the source text (input_context, or "
                                                               "document) is needed to import the document")
    report = reporter(FAITHFULNESS_FILE, f_line, "input_type")
    input_type = _choice(values.get("input_type"), INPUT_TYPES, report)
    length = _choice(values.get("length"), LENGTHS, reporter(FAITHFULNESS_FILE, f_line, "length"))
    sentences = values.get("sentences") or []
    n = len(sentences)

    fv = _flags(f_row.get("fact_verification_label"), n, reporter(FAITHFULNESS_FILE, f_line,
                                                                  "fact_verification_label"), "sentence")
    types = _error_types(f_row.get("fact_verification_error_type"), n,
                         reporter(FAITHFULNESS_FILE, f_line, "fact_verification_error_type"))
    keyfacts = k_row.get("keyfact")
    candidates = k_row.get("pred_keyfact")
    for name, facts in (("keyfact", keyfacts), ("pred_keyfact", candidates)):
        if facts is not None and (not isinstance(facts, list) or not all(isinstance(f, str) and f.strip()
                                                                          for f in facts)):
            check.add(KEYFACT_FILE, k_line, name, "must be a list of non-empty strings")
    keyfacts = keyfacts if isinstance(keyfacts, list) else []
    candidates = candidates if isinstance(candidates, list) else []
    validation = ([] if k_row.get("keyfact_validation_label") is None else
                  _flags(k_row["keyfact_validation_label"], len(candidates),
                         reporter(KEYFACT_FILE, k_line, "keyfact_validation_label"), "candidate key-fact"))
    keyfact_label = _flags(k_row.get("keyfact_label"), len(keyfacts),
                           reporter(KEYFACT_FILE, k_line, "keyfact_label"), "human key-fact")
    sentence_label = _flags(k_row.get("sentence_label"), n, reporter(KEYFACT_FILE, k_line, "sentence_label"),
                            "sentence")
    scores = {name: _score(row.get(name), reporter(file, line, name))
              for file, line, row, name in ((FAITHFULNESS_FILE, f_line, f_row, "faithfulness_score"),
                                            (KEYFACT_FILE, k_line, k_row, "completeness"),
                                            (KEYFACT_FILE, k_line, k_row, "conciseness"))}
    machine = {}
    for dimension, name in MACHINE.items():
        for file, line, row in ((FAITHFULNESS_FILE, f_line, f_row), (KEYFACT_FILE, k_line, k_row)):
            if row.get(name) is not None:
                given = _machine_scores(row[name], reporter(file, line, name))
                if dimension in machine and machine[dimension] != given:
                    check.add(file, line, name, f"differs from line {f_line} of {FAITHFULNESS_FILE}")
                machine[dimension] = given
    if len(check.errors) > found:
        return None
    corpus = {name: values[name] for name in ("uid", "doc_id", "source", "domain", "redact_type", "reference",
                                              "model", "summary", "sentences") if values.get(name) is not None}
    corpus.update(document=text, input_type=input_type)
    if length:
        corpus["length"] = length
    if candidates:
        corpus["pred_keyfact"] = candidates
    extra = [fact for fact in keyfacts if fact not in candidates]  # Human key-facts that are not candidates.
    if extra:
        corpus["keyfact"] = extra
    labels = {"fact_verification_label": fv, "fact_verification_error_type": types,
              "faithfulness_score": scores["faithfulness_score"], "keyfact_validation_label": validation,
              "keyfact": keyfacts, "keyfact_label": keyfact_label, "sentence_label": sentence_label,
              "completeness": scores["completeness"], "conciseness": scores["conciseness"]}
    return _Summary(uid=uid, model=model, line=f_line, corpus=corpus, labels=labels, machine=machine)


@transaction.atomic
def import_release(*, project: Project, faithfulness: bytes, keyfact: bytes, release: str) -> ReleaseImport:
    """Check both files whole, then write everything into `project`, which must be empty (a reference project)."""
    check = _Checker()
    release = release.strip()
    if not release or len(release) > ReleaseLabels._meta.get_field("release").max_length or unstorable(release):
        check.add("", 0, "", "the release needs a name of 1 to 100 characters, e.g. UniSumEval-v1.0")
    if project.documents.exists():
        check.add("", 0, "", f"project {project.slug!r} already has documents: import a release into a new project, "
                             "so that its labels are never mixed with others")
    files = {FAITHFULNESS_FILE: _read(FAITHFULNESS_FILE, faithfulness, check),
             KEYFACT_FILE: _read(KEYFACT_FILE, keyfact, check)}
    check.raise_if_any()
    result = ReleaseImport()
    seen = set().union(*(row for rows in files.values() for _, row in rows.values()))
    result.ignored_fields = sorted(str(name) for name in seen - KNOWN)

    summaries: list[_Summary] = []
    first, second = files[FAITHFULNESS_FILE], files[KEYFACT_FILE]
    for key in [*first, *(key for key in second if key not in first)]:
        states = {rows[key][1][STATE].strip() for rows in (first, second) if key in rows}
        if states != {SUCCESS}:
            result.left_out.append(key)  # In either file, or in the only one that has it.
            continue
        if key not in first or key not in second:
            file, line = (FAITHFULNESS_FILE, first[key][0]) if key in first else (KEYFACT_FILE, second[key][0])
            other = KEYFACT_FILE if key in first else FAITHFULNESS_FILE
            check.add(file, line, "uid", f"uid {key[0]!r} and model {key[1]!r} are not in {other}")
            continue
        merged = _merge(key, first[key], second[key], check)
        if merged is not None:
            summaries.append(merged)
    _check_documents(summaries, check)
    if not summaries and not check.errors:
        check.add("", 0, "", "no summary is marked 'success' in both files: nothing to import")
    check.raise_if_any()

    corpus = "\n".join(json.dumps(summary.corpus, ensure_ascii=False) for summary in summaries).encode()
    try:
        imported = import_dataset(project=project, data=corpus, filename="release.jsonl")
    except DatasetError as exc:  # The corpus checks (lengths, storable text ...): line i is the i-th summary.
        for error in exc.errors:
            line = summaries[error.line - 1].line if 0 < error.line <= len(summaries) else 0
            field = "input_context" if error.field == "document" else error.field
            check.add(FAITHFULNESS_FILE, line, field, error.message)
        check.raise_if_any()
    result.documents, result.summaries, result.keyfacts = (imported.documents_created, imported.summaries_created,
                                                           imported.keyfacts_created)
    _store(project, summaries, release, result)
    return result


def _check_documents(summaries: list[_Summary], check: _Checker) -> None:
    """A document's key-facts and their validation labels are the same on every row of the document."""
    first: dict[str, _Summary] = {}
    for summary in summaries:
        earlier = first.setdefault(summary.uid, summary)
        for name in DOCUMENT_LABELS:
            if _document_value(summary, name) != _document_value(earlier, name):
                check.add(KEYFACT_FILE, 0, name, f"differs between the rows of uid {summary.uid!r} (models "
                                                 f"{earlier.model!r} and {summary.model!r})")


def _document_value(summary: _Summary, name: str):
    return summary.corpus.get(name, []) if name == "pred_keyfact" else summary.labels[name]


def _store(project: Project, summaries: list[_Summary], release: str, result: ReleaseImport) -> None:
    documents = dict(Document.objects.filter(project=project).values_list("uid", "pk"))
    summary_ids = {(uid, model): pk for pk, uid, model in Summary.objects.filter(document__project=project)
                   .values_list("pk", "document__uid", "model")}
    # A candidate is a human key-fact when the release's key-facts include it; the others were rejected.
    accepted = defaultdict(set)
    for summary in summaries:
        accepted[documents[summary.uid]].update(summary.labels["keyfact"])
    for document_id, texts in accepted.items():
        facts = KeyFact.objects.filter(document_id=document_id)
        facts.filter(text__in=texts).update(status=KeyFact.Status.ACCEPTED)
        facts.exclude(text__in=texts).update(status=KeyFact.Status.REJECTED)
    ReleaseLabels.objects.bulk_create([
        ReleaseLabels(project=project, summary_id=summary_ids[summary.uid, summary.model], release=release,
                      **summary.labels) for summary in summaries], batch_size=1000)
    scores: dict[tuple[str, int], dict] = defaultdict(dict)
    for summary in summaries:
        for dimension, by_evaluator in summary.machine.items():
            for name, value in by_evaluator.items():
                scores[name, summary_ids[summary.uid, summary.model]][dimension] = value
    EvaluatorScore.objects.bulk_create([
        EvaluatorScore(project=project, summary_id=summary_id, evaluator=name, origin=EvaluatorScore.Origin.IMPORTED,
                       details={"release": release}, **dimensions)
        for (name, summary_id), dimensions in scores.items()], batch_size=2000)
    for name, _ in scores:
        result.evaluators[name] = result.evaluators.get(name, 0) + 1
    result.evaluators = dict(sorted(result.evaluators.items()))
