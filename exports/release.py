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
  `machine_evaluation_results_<dimension>` objects, its name as written; per sentence where the file gives them
  (exports.machine_scores: the platform's export writes them), EvaluatorSentenceScore rows;
- a summary whose `summary_success_state` is not "success" (in either file) is left out of all of this, as the
  release's own benchmark script leaves it out, whatever else its row lacks (a failed summary may have no model);
  the result counts them.
The release as published has gaps: a null or NaN human or machine score is a missing value, counted in the result,
never a refusal. What is refused is a file that cannot be read as the release: broken JSON, a missing required
field, a label list of the wrong length, rows of one document that disagree on its text. Everything is checked
before anything is written, and written in one transaction: a file with a problem imports nothing, and every
problem is reported with its file, line and field.
"""

import dataclasses
import json
import math
from collections import Counter, defaultdict

from django.db import transaction

from corpus.importing import (
    DOCUMENT_FIELDS,
    INPUT_TYPES,
    LENGTHS,
    DatasetError,
    RowError,
    decode,
    import_dataset,
    read_jsonl,
)
from corpus.models import Document, KeyFact, Project, Summary
from corpus.storable_text import unstorable

from .machine_scores import FIELDS as MACHINE_FIELDS
from .machine_scores import (
    MACHINE,
    MISSING_TEXT,
    SENTENCE_FIELDS,
    ImportedScores,
    sentence_values,
    store_imported_scores,
    summary_scores,
)
from .models import ReleaseLabels

FAITHFULNESS_FILE = "unisumeval_faithfulness.jsonl"
KEYFACT_FILE = "unisumeval_keyfact.jsonl"
SUCCESS = "success"
STATE = "summary_success_state"
METADATA = ("uid", "doc_id", "source", "domain", "length", "input_type", "redact_type", "model", "reference",
            "summary", "sentences")
SOURCE_TEXT = ("input_context", "document")
FAITHFULNESS_LABELS = ("fact_verification_label", "fact_verification_error_type", "faithfulness_score")
KEYFACT_LABELS = ("pred_keyfact", "keyfact_validation_label", "keyfact", "keyfact_label", "completeness",
                  "sentence_label", "conciseness")
# The platform's export also writes these; the rest of its fields are beyond the release and not read.
KNOWN = {*METADATA, *SOURCE_TEXT, *MACHINE_FIELDS, *FAITHFULNESS_LABELS, *KEYFACT_LABELS, STATE}
# What each file must give for a summary it marks a success: the labels. The human scores may be missing (null or
# NaN, as the release has them where a score is undefined): counted, never refused.
REQUIRED = {
    FAITHFULNESS_FILE: ("fact_verification_label",),
    KEYFACT_FILE: ("keyfact", "keyfact_label", "sentence_label"),
}
HUMAN_SCORES = ((FAITHFULNESS_FILE, "faithfulness_score"), (KEYFACT_FILE, "completeness"),
                (KEYFACT_FILE, "conciseness"))
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
    # Not a success, in either file: (uid, model), either None where the row has none.
    left_out: list[tuple[str | None, str | None]] = dataclasses.field(default_factory=list)
    # name -> dimension -> summaries with a score (null and NaN are not scores).
    evaluators: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    # name -> dimension -> imported summaries without a score, for a dimension the evaluator scores elsewhere.
    missing_scores: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    sentence_scores: dict[str, int] = dataclasses.field(default_factory=dict)  # name -> sentences judged
    missing_human: dict[str, int] = dataclasses.field(default_factory=dict)  # score field -> summaries without one
    ignored_fields: list[str] = dataclasses.field(default_factory=list)  # Fields the release has and we do not read.

    def __str__(self) -> str:
        def counts(by_dimension: dict[str, int]) -> str:
            return ", ".join(f"{dimension} {count}" for dimension, count in by_dimension.items())

        evaluators = "; ".join(
            f"{name}: {counts(by_dimension)}"
            + (f", sentences {self.sentence_scores[name]}" if self.sentence_scores.get(name) else "")
            for name, by_dimension in self.evaluators.items()) or "none"
        missing = [f"{name}: {counts(by_dimension)}" for name, by_dimension in self.missing_scores.items()]
        missing += [f"human {field}: {count}" for field, count in self.missing_human.items()]
        return (f"{self.documents} documents, {self.summaries} summaries with their release labels, "
                f"{self.keyfacts} key-facts; {len(self.left_out)} summaries left out (summary_success_state is "
                f"not 'success'); summaries scored per evaluator: {evaluators}; missing scores (null or NaN): "
                f"{'; '.join(missing) or 'none'}")


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


def _given(value) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _read(name: str, data: bytes, check: _Checker) -> tuple[dict[tuple[str, str], tuple[int, dict]], Counter]:
    """(uid, model) -> (line, row) of the rows of one file marked a success, and how many rows of each
    (uid, model) are not (either None where the row has none: a failed summary may lack its model)."""
    failed = Counter()
    try:
        text = decode(data)
    except DatasetError as exc:
        for error in exc.errors:
            check.add(name, error.line, error.field, error.message)
        return {}, failed
    errors: list[RowError] = []
    rows: dict[tuple[str, str], tuple[int, dict]] = {}
    for row in read_jsonl(text, errors):
        values = row.values
        state = values.get(STATE)
        if _given(state) is None:
            check.add(name, row.line, STATE, "missing required field" if state is None
                      else "must be a non-empty string")
            continue
        uid, model = values.get("uid"), values.get("model")
        if state.strip() != SUCCESS:  # Left out whatever else the row lacks, as the release's own script does.
            failed[_given(uid), _given(model)] += 1
            continue
        for key in ("uid", "model"):
            if _given(values.get(key)) is None:
                check.add(name, row.line, key, "missing required field" if values.get(key) is None
                          else "must be a non-empty string")
        if _given(uid) is None or _given(model) is None:
            continue
        if (uid, model) in rows:
            check.add(name, row.line, "model", f"duplicate row: uid {uid!r} and model {model!r} already on line "
                                               f"{rows[uid, model][0]}")
            continue
        rows[uid, model] = (row.line, values)
    for error in errors:
        check.add(name, error.line, error.field, error.message)
    if not rows and not failed and not errors:
        check.add(name, 0, "", "the file holds no rows")
    return rows, failed


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


def _flags(value, n: int | None, report, what: str) -> list[int | None] | None:
    """0/1 labels, one per item (`n` items; None: any number); null for an item without a majority (the
    platform's export of a study whose item has no counted label yet). A missing list is reported as a missing
    field."""
    if value is None:
        return None
    if not isinstance(value, list):
        report(f"must be a list of 0/1 labels, one per {what}")
        return None
    flags = []
    for position, item in enumerate(value, start=1):
        if item is None:
            flags.append(None)
        elif isinstance(item, bool) or (isinstance(item, (int, float)) and item in (0, 1)):
            flags.append(int(item))
        else:
            report(f"item {position} must be 0, 1 or null, got {item!r}")
            return None
    if n is not None and len(flags) != n:
        report(f"has {len(flags)} labels for {n} {what}s")
        return None
    return flags


def _score(value, report) -> float | None:
    """A human score in [0, 1]; None when missing (null, NaN or absent)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str) and value.strip().lower() in MISSING_TEXT:
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
    sentences: dict[str, dict[str, list]]  # sentence field -> evaluator -> one entry per sentence


def _merge(key, faithfulness: tuple[int, dict], keyfact: tuple[int, dict], check: _Checker) -> _Summary | None:
    uid, model = key
    (f_line, f_row), (k_line, k_row) = faithfulness, keyfact
    found = len(check.errors)

    def reporter(file, line, field):
        return lambda message: check.add(file, line, field, message)

    for file, line, row in ((FAITHFULNESS_FILE, f_line, f_row), (KEYFACT_FILE, k_line, k_row)):
        for name in REQUIRED[file]:
            if row.get(name) is None:
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
    # Each machine field from either file; where both give it (the platform's export, read as both), they agree.
    read = {}
    for field in (*MACHINE.values(), *SENTENCE_FIELDS):
        for file, line, row in ((FAITHFULNESS_FILE, f_line, f_row), (KEYFACT_FILE, k_line, k_row)):
            if row.get(field) is not None:
                report = reporter(file, line, field)
                given = (sentence_values(row[field], field, n, report) if field in SENTENCE_FIELDS
                         else summary_scores(row[field], report))
                if field in read and read[field] != given:
                    check.add(file, line, field, f"differs from line {f_line} of {FAITHFULNESS_FILE}")
                read[field] = given
    machine = {dimension: read[field] for dimension, field in MACHINE.items() if field in read}
    by_sentence = {field: read[field] for field in SENTENCE_FIELDS if field in read}
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
    return _Summary(uid=uid, model=model, line=f_line, corpus=corpus, labels=labels, machine=machine,
                    sentences=by_sentence)


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
    (first, failed_first), (second, failed_second) = (_read(FAITHFULNESS_FILE, faithfulness, check),
                                                      _read(KEYFACT_FILE, keyfact, check))
    check.raise_if_any()
    result = ReleaseImport()
    seen = set().union(*(row for rows in (first, second) for _, row in rows.values()))
    result.ignored_fields = sorted(str(name) for name in seen - KNOWN)
    # A summary that failed is in both files as a rule: counted once, by the file that has more of its rows.
    failed = failed_first | failed_second
    result.left_out = list(failed.elements())

    summaries: list[_Summary] = []
    for key in [*first, *(key for key in second if key not in first)]:
        if key in failed:  # A success in one file only: left out, as in the file that says it failed.
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
    """A document's text, metadata, key-facts and their validation labels are the same on every row of the
    document (checked here, before the dataset import, so that the problem is reported at the release's line)."""
    first: dict[str, _Summary] = {}
    for summary in summaries:
        earlier = first.setdefault(summary.uid, summary)
        for name in DOCUMENT_FIELDS:
            if summary.corpus.get(name) != earlier.corpus.get(name):
                check.add(FAITHFULNESS_FILE, summary.line, "input_context" if name == "document" else name,
                          f"differs from line {earlier.line} for the same uid {summary.uid!r}")
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
    for _, field in HUMAN_SCORES:
        if missing := sum(summary.labels[field] is None for summary in summaries):
            result.missing_human[field] = missing
    result.evaluators, result.missing_scores, result.sentence_scores = store_imported_scores(
        project=project, release=release,
        summaries=[ImportedScores(summary_ids[summary.uid, summary.model], summary.machine, summary.sentences,
                                  len(summary.corpus["sentences"])) for summary in summaries])
