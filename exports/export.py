"""The benchmark export: the UniSumEval release format, and what the release lacked (README, "Analytics and the
benchmark export").

Files written next to `out` (stem = out without its extension):
- out: one row per summary with the release fields (exports.aggregation.RELEASE_FIELDS) plus `composite`, as JSONL
  (one object a line) or JSON (one array); then, as the release has them, `summary_success_state` and every
  evaluator's stored scores, per summary and per sentence (exports.machine_scores), so that the file reads as the
  release (import_release, with the file given as both of its files); with `annotator_labels` each row also carries
  every counted label under pseudonymous annotator ids (Annotator.pseudonym, derived from its public_id: stable across
  exports, never the account or crowd worker id), `item_flags` (the annotators' comments on items they flagged as
  broken or unclear, never on attention checks) and `adjudications` (reviewers' settled labels with their reasons,
  kept apart; `used_in_scores` says whether the scores used them); with `assistance`, the AI assistance shown
  (ai_category, ai_reason, highlighted source sentences per target).
- stem.attention_checks.jsonl (`checks`): every answer given on an attention-check unit with the expected
  answer and the submission's grade, kept apart from the benchmark rows.
- stem.summaries.csv|parquet and stem.labels.csv|parquet (`tables`): per-summary scores, and annotator-level
  labels in long form; stem.agreement.csv|parquet and stem.score_table.csv|parquet with the card's tables.
- With `dawid_skene`, Dawid-Skene as a second opinion beside majority vote (exports.second_opinion, computed once
  per task from all its counted labels before the rows are written): each row also carries DAWID_SKENE_FIELDS
  (exports.aggregation: per sentence, candidate key-fact and key-fact/sentence pair, its label and posterior next
  to the majority label; the release fields are unchanged), and stem.dawid_skene.json holds per task how often it
  differs from the majority and how the EM ended, and per annotator (pseudonyms) its sensitivity and specificity
  beside their attention-check pass rate; with `tables`, also stem.dawid_skene.csv|parquet (per annotator).
- stem.card.md (`card`): the dataset card (exports.card).
- stem.evaluator_benchmark.json (whenever the project has evaluator scores): the evaluator benchmark as the
  analytics page shows it (summary and system level per domain and source, sentence-level detection with its
  split, combinations); with `tables`, also stem.evaluator_benchmark.csv|parquet and
  stem.evaluator_detection.csv|parquet.

Memory stays flat: rows are computed per chunk of documents (exports.aggregation) and written one at a time;
the label table is streamed from one chunked query. Only a few numbers per summary are kept for the card.
"""

import dataclasses
import json
from pathlib import Path

import pandas as pd
from django.db.models import TextField
from django.db.models.functions import Cast

from annotation.models import Annotator, Task
from assist.models import EvaluatorScore
from corpus.models import Document, KeyFact, Project

from .aggregation import DAWID_SKENE_FIELDS, REDUNDANCY_FIELDS, RELEASE_FIELDS, summary_results
from .analytics import Collector
from .csv_files import write_frame
from .machine_scores import FIELDS as MACHINE_FIELDS
from .machine_scores import MachineScores
from .second_opinion import ANNOTATOR_COLUMNS, dawid_skene_summary, second_opinions
from .selectors import RELEASE, analysis_labels, as_bool, as_uuid, check_labels, label_source, stream

FORMATS = ("jsonl", "json")
TABLE_FORMATS = ("csv", "parquet")
LABEL_CHUNK = 50_000


@dataclasses.dataclass(frozen=True)
class ExportOptions:
    format: str = "jsonl"
    annotator_labels: bool = False
    assistance: bool = False
    checks: bool = False
    tables: str | None = None
    card: bool = False
    include_simulated: bool = False
    dawid_skene: bool = False

    def __post_init__(self):
        if self.format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}")
        if self.tables not in (None, *TABLE_FORMATS):
            raise ValueError(f"tables must be one of {', '.join(TABLE_FORMATS)}")


@dataclasses.dataclass
class ExportResult:
    label_source: str
    rows: int = 0
    files: list[Path] = dataclasses.field(default_factory=list)


def export_benchmark(*, project: Project, out: Path, options: ExportOptions = ExportOptions(),
                     progress=None) -> ExportResult:
    """Write the export; `progress(n)` is called with the number of summaries written since the last call."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    source = label_source(project, include_simulated=options.include_simulated)
    result = ExportResult(label_source=source)
    evaluators = EvaluatorScore.objects.filter(project=project, status=EvaluatorScore.Status.OK).exists()
    collector = Collector(source) if (options.card or options.tables or evaluators) else None
    summary_table = None
    if options.tables:
        summary_table = _TableWriter(_sibling(out, "summaries", options.tables), SUMMARY_COLUMNS)
    opinions = second_opinions(project, source) if options.dawid_skene and source != RELEASE else None
    rows = summary_results(project, source, annotator_labels=options.annotator_labels,
                           assistance=options.assistance, with_ai=collector is not None, opinions=opinions)
    encode = _RowEncoder()
    machine = MachineScores(project) if evaluators else None
    with out.open("w", encoding="utf-8") as handle:
        if options.format == "json":
            handle.write("[\n")
        for row in rows:
            if collector is not None:
                collector.add(row)
            public = {name: row[name] for name in AFTER_DOCUMENT}
            public["composite"] = row["composite"]
            # A summary stored here is one its summarizer gave: a success in the release's terms.
            public["summary_success_state"] = SUCCESS
            public.update(machine.fields(row["uid"], row["model"], len(row["sentences"])) if machine is not None
                          else NO_MACHINE_SCORES)
            public["label_source"] = source
            public.update((name, row[name]) for name in REDUNDANCY_FIELDS if name in row)
            if opinions is not None:
                public.update((name, row[name]) for name in DAWID_SKENE_FIELDS)
            for extra in ("annotator_labels", "adjudications", "item_flags", "assistance"):
                if extra in row:
                    public[extra] = row[extra]
            if options.format == "json" and result.rows:
                handle.write(",\n")
            handle.write(encode(row, public))
            if options.format == "jsonl":
                handle.write("\n")
            result.rows += 1
            if summary_table is not None:
                summary_table.add({name: row[name] for name in SUMMARY_COLUMNS})
            if progress:
                progress(1)
        if options.format == "json":
            handle.write("\n]\n")
    result.files.append(out)
    if summary_table is not None:
        result.files.append(summary_table.close())
    if options.checks:
        result.files.append(write_checks(project, _sibling(out, "attention_checks", "jsonl")))
    second_opinion = None
    if opinions is not None:
        second_opinion = dawid_skene_summary(project, opinions, source)
        path = _sibling(out, "dawid_skene", "json")
        path.write_text(json.dumps(second_opinion, ensure_ascii=False, indent=1), encoding="utf-8")
        result.files.append(path)
        if options.tables:
            result.files.append(_write_frame(pd.DataFrame(second_opinion["annotators"], columns=list(
                ANNOTATOR_COLUMNS)), _sibling(out, "dawid_skene", options.tables)))
    analytics = collector.finish() if collector is not None else None
    report = None
    if options.card or options.tables:
        from .report import agreement_report

        report = agreement_report(project, source=source)
    if options.tables:
        result.files.append(write_labels_table(project, source, _sibling(out, "labels", options.tables)))
        result.files.append(_write_frame(pd.DataFrame([row.flat() for row in report.rows]),
                                         _sibling(out, "agreement", options.tables)))
        table = analytics.summarizer_table()
        result.files.append(_write_frame(table.reset_index(), _sibling(out, "score_table", options.tables)))
    benchmark = None
    if evaluators:
        from .tables import evaluator_benchmark_tables

        benchmark = evaluator_benchmark_tables(project, analytics)
        path = _sibling(out, "evaluator_benchmark", "json")
        path.write_text(json.dumps(benchmark, ensure_ascii=False, indent=1), encoding="utf-8")
        result.files.append(path)
        if options.tables:
            result.files.append(_write_frame(pd.DataFrame(benchmark["summary_level"]),
                                             _sibling(out, "evaluator_benchmark", options.tables)))
            result.files.append(_write_frame(pd.DataFrame(benchmark["sentence_level"]["detection"]),
                                             _sibling(out, "evaluator_detection", options.tables)))
    if options.card:
        from .card import dataset_card

        path = _sibling(out, "card", "md")
        path.write_text(dataset_card(project, analytics, report, result.rows, evaluators=benchmark,
                                     dawid_skene=second_opinion), encoding="utf-8")
        result.files.append(path)
    return result


SUCCESS = "success"
NO_MACHINE_SCORES = {field: {} for field in MACHINE_FIELDS}
BEFORE_DOCUMENT = RELEASE_FIELDS[:RELEASE_FIELDS.index("document")]
AFTER_DOCUMENT = RELEASE_FIELDS[RELEASE_FIELDS.index("document") + 1:]


class _RowEncoder:
    """A row as json.dumps(..., ensure_ascii=False) writes it, the source document's text encoded once per document:
    the 9 or so summaries of a document follow one another, and the document is most of an export's bytes."""

    def __init__(self):
        self.encode = json.JSONEncoder(ensure_ascii=False).encode
        self.document, self.document_json = None, "null"

    def __call__(self, row: dict, after: dict) -> str:
        """`after`: the fields that follow `document`, in their order."""
        document = row["document"]
        if document is not self.document:
            self.document, self.document_json = document, self.encode(document)
        before = self.encode({name: row[name] for name in BEFORE_DOCUMENT})
        return f'{before[:-1]}, "document": {self.document_json}, {self.encode(after)[1:]}'


SUMMARY_COLUMNS = ("uid", "doc_id", "source", "domain", "length", "input_type", "redact_type", "model",
                   "faithfulness_score", "completeness", "conciseness", "composite")


def _sibling(out: Path, name: str, extension: str) -> Path:
    stem = out.name.split(".")[0]
    return out.with_name(f"{stem}.{name}.{extension}")


class _TableWriter:
    """Rows appended in chunks to a CSV file or a Parquet file (pyarrow's writer), never all in memory."""

    def __init__(self, path: Path, columns: tuple[str, ...], chunk: int = 5000):
        self.path, self.columns, self.chunk = path, list(columns), chunk
        self.buffer, self.writer, self.started = [], None, False

    def add(self, row: dict) -> None:
        self.add_values(tuple(row[name] for name in self.columns))

    def add_values(self, values: tuple) -> None:
        """One row as a tuple in the columns' order."""
        self.buffer.append(values)
        if len(self.buffer) >= self.chunk:
            self.flush()

    def flush(self) -> None:
        if not self.buffer and self.started:
            return
        frame = pd.DataFrame.from_records(self.buffer, columns=self.columns)
        self.buffer = []
        if self.path.suffix == ".csv":
            write_frame(frame, self.path, append=self.started)
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self.writer is None:
                self.writer = pq.ParquetWriter(self.path, table.schema)
            self.writer.write_table(table.cast(self.writer.schema))
        self.started = True

    def close(self) -> Path:
        self.flush()
        if self.writer is not None:
            self.writer.close()
        return self.path


def _write_frame(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".csv":
        write_frame(frame, path)
    else:
        frame.to_parquet(path, index=False)
    return path


def keyfact_positions(project: Project) -> tuple[dict[int, int], dict[int, int]]:
    """keyfact id -> its position in the row's `pred_keyfact` list, and in its `keyfact` (human) list."""
    candidates, human, seen_c, seen_h = {}, {}, {}, {}
    for pk, document_id, origin, status in (KeyFact.objects.filter(document__project=project)
                                            .order_by("document_id", "index")
                                            .values_list("pk", "document_id", "origin", "status")):
        if origin != KeyFact.Origin.HUMAN:
            candidates[pk] = seen_c[document_id] = seen_c.get(document_id, -1) + 1
        if status == KeyFact.Status.ACCEPTED:
            human[pk] = seen_h[document_id] = seen_h.get(document_id, -1) + 1
    return candidates, human


LABEL_COLUMNS = ("annotator", "task", "uid", "model", "sentence", "pred_keyfact", "keyfact", "has_error",
                 "error_types", "ai_right", "useful", "aligned", "seconds_on_item")


def write_labels_table(project: Project, source: str, path: Path) -> Path:
    """Annotator-level labels in long form, one row per label, streamed in chunks."""
    names = {pk: Annotator(public_id=public_id).pseudonym
             for pk, public_id in Annotator.objects.values_list("pk", "public_id")}
    candidates, human = keyfact_positions(project)
    uids = dict(Document.objects.filter(project=project).values_list("pk", "uid"))
    writer = _TableWriter(path, LABEL_COLUMNS, chunk=LABEL_CHUNK)
    # The error types as JSON text, decoded here once per distinct text.
    rows = stream(analysis_labels(project, source).order_by("unit__hit__document_id", "unit_id", "annotator_id")
                  .values_list("annotator_id", "unit__task", "unit__hit__document_id", "unit__hit__summary__model",
                               "unit__summary_sentence__index", "unit__keyfact_id", "has_error",
                               Cast("error_types", TextField()), "ai_right", "useful", "aligned", "seconds_on_item"),
                  LABEL_CHUNK)
    types_json = {}
    for annotator, task, document, model, sentence, keyfact, has_error, types, ai_right, useful, aligned, seconds \
            in rows:
        if types not in types_json:
            types_json[types] = json.dumps((json.loads(types) if types else None) or [])
        writer.add_values((
            names[annotator], task, uids[document], model, sentence,
            candidates.get(keyfact) if task == Task.KEYFACT_VALIDATION else None,
            human.get(keyfact) if task == Task.KEYFACT_ALIGNMENT else None,
            as_bool(has_error), types_json[types], as_bool(ai_right), as_bool(useful), as_bool(aligned), seconds))
    return writer.close()


def write_checks(project: Project, path: Path) -> Path:
    """Every answer on an attention-check unit, with what was expected and the submission's grade."""
    with path.open("w", encoding="utf-8") as handle:
        # Read as stored (see selectors.stream): the ids, booleans and JSON are converted here, each id once.
        rows = stream(check_labels(project).order_by("unit__hit__task", "assignment_id", "unit__position")
                      .values_list("annotator_id", "unit__hit__task", "unit__hit__document__uid",
                                   "unit__hit__summary__model", "unit__position", "unit__attention_check__kind",
                                   Cast("unit__attention_check__expected", TextField()), "has_error", "ai_right",
                                   "useful", "aligned", "assignment_id", "assignment__public_id",
                                   "assignment__grade__passed",
                                   "assignment__grade__override_passed"), 10_000)
        annotators = {pk: (Annotator(public_id=public_id).pseudonym, provider)
                      for pk, public_id, provider in Annotator.objects.values_list("pk", "public_id", "provider")}
        assignment = submission = None
        decoded = {}
        for (annotator, task, uid, model, position, kind, expected, has_error, ai_right, useful, aligned,
             assignment_id, public_id, passed, override) in rows:
            if assignment_id != assignment:  # The rows of one submission are together: one id to convert each.
                assignment, submission = assignment_id, str(as_uuid(public_id))
            if expected not in decoded:  # A few distinct expected answers: each decoded once, only read.
                decoded[expected] = json.loads(expected)
            expected = decoded[expected]
            answer = {"has_error": as_bool(has_error), "ai_right": as_bool(ai_right), "useful": as_bool(useful),
                      "aligned": as_bool(aligned)}
            given = {name: answer[name] for name in expected}
            pseudonym, provider = annotators[annotator]
            handle.write(json.dumps({
                "annotator": pseudonym, "simulated": provider == "simulated",
                "task": task, "uid": uid, "model": model, "position": position, "kind": kind,
                "expected": expected, "answer": given, "correct": given == expected,
                "submission": submission,
                "submission_passed": as_bool(passed) if override is None else as_bool(override),
            }) + "\n")
    return path
