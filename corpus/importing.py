"""Dataset import (JSONL or CSV with the UniSumEval field names; one row = one summary, documents shared by uid).

The rules: validate every row before writing anything; report every problem with its line and field; write all or
nothing; re-importing the same file changes nothing; a re-import that disagrees with what is stored is an error.

The file is read as a stream, a piece at a time, so that an import's memory does not follow the file's size: each
row is checked and folded into the plan as it is read, and the plan keeps one copy of each document (UniSumEval
repeats it on every row of its summaries, nine times) and each summary's text, never the rows themselves.
"""

import csv
import hashlib
import io
import json
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO

from django.conf import settings
from django.db import IntegrityError, transaction

from corpus import worker_pool
from corpus.bulk import cycle_collection_paused, insert_rows, insert_rows_returning
from corpus.models import Document, DocumentSentence, KeyFact, Project, Summary, SummarySentence
from corpus.segmentation import (
    DIALOGUE,
    DOCUMENT,
    PARALLEL_FROM_CHARS,
    SUMMARY,
    Splitter,
    dialogue_turns,
    sentences_from_bounds,
)
from corpus.storable_text import may_hold_unstorable, unstorable

REQUIRED = ("uid", "doc_id", "source", "domain", "input_type", "model", "document", "summary")
OPTIONAL_TEXT = ("length", "redact_type", "reference")
OPTIONAL_LISTS = ("sentences", "pred_keyfact", "keyfact")
KNOWN_FIELDS = set(REQUIRED) | set(OPTIONAL_TEXT) | set(OPTIONAL_LISTS)
# Long texts: what the size limit applies to.
TEXT_FIELDS = ("document", "summary", "reference")
# Fields that describe the document: every row of one uid must agree on them.
DOCUMENT_FIELDS = ("doc_id", "source", "domain", "input_type", "length", "redact_type", "reference", "document")
INPUT_TYPES = {choice.value for choice in Document.InputType}
LENGTHS = {choice.value for choice in Document.Length}
MAX_KEYFACTS = 100


def column_lengths() -> dict[str, int]:
    """Field -> the max_length of the column it is stored in, read from the models: SQLite ignores it, PostgreSQL
    refuses a longer value, and the import must refuse it the same way on both, with a message."""
    columns = {name: Document._meta.get_field(name) for name in ("uid", "doc_id", "source", "domain",
                                                                  "redact_type")}
    columns["model"] = Summary._meta.get_field("model")
    return {name: column.max_length for name, column in columns.items()}


MAX_LENGTHS = column_lengths()


@dataclass(frozen=True)
class RowError:
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "file"
        return f"{where}, field '{self.field}': {self.message}" if self.field else f"{where}: {self.message}"


class DatasetError(Exception):
    """The file cannot be imported; `errors` lists every problem found. Nothing was written."""

    def __init__(self, errors: list[RowError]):
        self.errors = errors
        super().__init__("\n".join(str(error) for error in errors))


@dataclass
class ImportResult:
    documents_created: int = 0
    documents_unchanged: int = 0
    summaries_created: int = 0
    summaries_unchanged: int = 0
    keyfacts_created: int = 0
    rows: int = 0
    split_processes: int = 1  # what split the texts (split_processes), for the operator

    @property
    def changed(self) -> bool:
        return bool(self.documents_created or self.summaries_created or self.keyfacts_created)


@dataclass
class Row:
    line: int
    values: dict = field(default_factory=dict)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def decode(data: bytes) -> str:
    if not data or data.isspace():  # not strip(), which copies the whole file
        raise DatasetError([RowError(0, "", "the file is empty")])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DatasetError([RowError(line, "", f"invalid UTF-8 at byte {exc.start}; save the file as UTF-8")]) from None


# What an import reads of its file at a time.
CHUNK_BYTES = 1 << 20
EMPTY = "the file is empty"


@contextmanager
def opened(data: "bytes | os.PathLike | BinaryIO") -> Iterator[BinaryIO]:
    """A binary stream over `data`: the file's bytes, a path to it, or a file object already open (left open)."""
    if isinstance(data, bytes | bytearray | memoryview):
        yield io.BytesIO(data)
    elif isinstance(data, os.PathLike):
        with open(data, "rb") as file:
            yield file
    else:
        yield data


def stream_size(file: BinaryIO) -> int | None:
    """The bytes left to read in `file`, when it can tell without being read."""
    try:
        return os.fstat(file.fileno()).st_size - file.tell()
    except (AttributeError, OSError, ValueError):
        pass
    try:
        position = file.tell()
        end = file.seek(0, io.SEEK_END)
        file.seek(position)
        return end - position
    except (AttributeError, OSError, ValueError):
        return None


def is_blank(file: BinaryIO) -> bool:
    """Whether the rest of `file` is whitespace alone, read a piece at a time."""
    while chunk := file.read(CHUNK_BYTES):
        if not chunk.isspace():
            return False
    return True


class FileLines:
    """A binary file's lines, split at line feeds and decoded from UTF-8 one at a time, with or without their line
    feed, from pieces of CHUNK_BYTES: besides a piece, only the line being read is held. Invalid UTF-8 stops the
    import with its line, as a decode of the whole file did. `suspect` turns true when a line read since it was
    last cleared may hold unstorable text (one scan of each line, not one per field of each row); `blank` stays true
    while the file has held whitespace alone."""

    def __init__(self, file: BinaryIO, limit: int, *, keep_ends: bool):
        self.file, self.limit, self.keep_ends = file, limit, keep_ends
        self.read_bytes = 0
        self.blank = True
        self.suspect = False

    def __iter__(self) -> Iterator[str]:
        number, offset, parts = 0, 0, []
        while chunk := self.file.read(CHUNK_BYTES):
            self.read_bytes += len(chunk)
            if self.read_bytes > self.limit:
                raise DatasetError([RowError(0, "", f"the file is over {self.limit:,} bytes, the limit")])
            if self.blank and not chunk.isspace():
                self.blank = False
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                parts.append(chunk[start:end + 1])
                line = b"".join(parts)
                parts.clear()
                number += 1
                yield self._decoded(line, number, offset)
                offset += len(line)
                start = end + 1
            if start < len(chunk):
                parts.append(chunk[start:])
        if parts:
            yield self._decoded(b"".join(parts), number + 1, offset)

    def _decoded(self, line: bytes, number: int, offset: int) -> str:
        body = line if self.keep_ends or not line.endswith(b"\n") else memoryview(line)[:-1]
        try:
            text = str(body, "utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError([RowError(number, "", f"invalid UTF-8 at byte {offset + exc.start}; save the file "
                                                     "as UTF-8")]) from None
        if not self.suspect and may_hold_unstorable(text):
            self.suspect = True
        return text


# A carriage return not followed by a line feed: where a CSV line also ends (as `open(newline="")` reads it).
LONE_CARRIAGE_RETURN = re.compile("(?<=\r)(?!\n)")


def csv_lines(lines: Iterable[str]) -> Iterator[str]:
    """Lines as the csv module counts them: a line that ends in a lone carriage return is a line too."""
    for line in lines:
        if "\r" in line:
            yield from (piece for piece in LONE_CARRIAGE_RETURN.split(line) if piece)
        else:
            yield line


def guess_format(filename: str) -> str:
    name = filename.lower()
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    raise DatasetError([RowError(0, "", f"cannot tell the format of '{filename}': use a .jsonl or .csv file")])


# Python's JSON parser recurses once per level and gives up near a thousand; no row of a dataset nests at all.
NESTED_TOO_DEEPLY = "not valid JSON: nested too deeply (a row is one JSON object of strings and lists of strings)"


def read_jsonl(text: str | Iterable[str], errors: list[RowError]) -> Iterator[Row]:
    """`text`: the whole file, or its lines without their line feeds (FileLines)."""
    # JSON Lines separates rows by "\n" alone (a "\r" before it is JSON whitespace). `splitlines` would also cut a
    # row at a U+2028 or U+0085 that a JSON string may hold as it is, and took a fifth of the file's parse.
    lines = text.split("\n") if isinstance(text, str) else text
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            values = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(RowError(number, "", f"not valid JSON ({exc.msg} at column {exc.colno})"))
            continue
        except RecursionError:
            errors.append(RowError(number, "", NESTED_TOO_DEEPLY))
            continue
        if not isinstance(values, dict):
            errors.append(RowError(number, "", f"expected a JSON object, got {type(values).__name__}"))
            continue
        yield Row(number, values)


def read_csv(text: str | Iterable[str], errors: list[RowError]) -> Iterator[Row]:
    """`text`: the whole file, or its lines with their line ends (csv_lines)."""
    reader = csv.DictReader(io.StringIO(text, newline="") if isinstance(text, str) else text, strict=True)
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        errors.append(RowError(1, "", f"unreadable CSV header ({exc})"))
        return
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        errors.append(RowError(1, "", f"the header lacks required column(s): {', '.join(missing)}"))
        return
    start = reader.line_num + 1
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            errors.append(RowError(start, "", f"unreadable CSV row ({exc})"))
            return
        if None in values:
            errors.append(RowError(start, "", "the row has more cells than the header"))
        else:
            for name in OPTIONAL_LISTS:
                # Lists travel through CSV as JSON arrays; an empty cell means "not given".
                cell = values.get(name)
                if cell in (None, ""):
                    values.pop(name, None)
                    continue
                try:
                    values[name] = json.loads(cell)
                except (json.JSONDecodeError, RecursionError):
                    errors.append(RowError(start, name, 'must be a JSON array of strings, e.g. ["a", "b"]'))
                    values.pop(name)
            for name in OPTIONAL_TEXT:
                if values.get(name) == "" and name != "reference":
                    values.pop(name)
            yield Row(start, values)
        start = reader.line_num + 1


def check_row(row: Row, max_chars: int, *, storable: bool = False) -> list[RowError]:
    """Every problem of one row. `storable`: the file as a whole is known to hold no unstorable text."""
    errors = []
    values = row.values
    for name in REQUIRED:
        value = values.get(name)
        if value is None:
            errors.append(RowError(row.line, name, "missing required field"))
        elif not isinstance(value, str):
            errors.append(RowError(row.line, name, f"must be a string, got {type(value).__name__}"))
        elif not value.strip():
            errors.append(RowError(row.line, name, "must not be empty"))
    for name in OPTIONAL_TEXT:
        value = values.get(name)
        if value is not None and not isinstance(value, str):
            errors.append(RowError(row.line, name, f"must be a string, got {type(value).__name__}"))
    for name in OPTIONAL_LISTS:
        if name not in values:
            continue
        value = values[name]
        if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
            errors.append(RowError(row.line, name, "must be a list of non-empty strings"))
        elif name == "sentences" and not value:
            errors.append(RowError(row.line, name, "must list at least one sentence"))
        elif len(value) > MAX_KEYFACTS and name != "sentences":
            errors.append(RowError(row.line, name, f"at most {MAX_KEYFACTS} key-facts per document"))
    if not storable:
        errors += check_storable(row)
    for name, limit in MAX_LENGTHS.items():
        value = values.get(name)
        if isinstance(value, str) and len(value) > limit:
            errors.append(RowError(row.line, name, f"is {len(value):,} characters; the limit is {limit:,}"))
    unreadable = set() if storable else {name for name in values if unstorable(name)}
    if unreadable:
        errors.append(RowError(row.line, "", f"a field name {unstorable(min(unreadable))}"))
    unknown = sorted(set(values) - KNOWN_FIELDS - unreadable)
    if unknown:
        errors.append(RowError(row.line, unknown[0], f"unknown field(s): {', '.join(unknown)}"))
    if isinstance(values.get("input_type"), str) and values["input_type"] and values["input_type"] not in INPUT_TYPES:
        errors.append(RowError(row.line, "input_type", f"must be one of {', '.join(sorted(INPUT_TYPES))}"))
    if isinstance(values.get("length"), str) and values["length"] not in LENGTHS:
        errors.append(RowError(row.line, "length", f"must be one of {', '.join(sorted(LENGTHS))} (or left out)"))
    for name in TEXT_FIELDS:
        value = values.get(name)
        if isinstance(value, str) and len(value) > max_chars:
            errors.append(
                RowError(row.line, name, f"is {len(value):,} characters; this site's limit is {max_chars:,} "
                         "(its operators can raise it)")
            )
    return errors


def check_storable(row: Row) -> list[RowError]:
    """Every text of the row, list items included, must be storable (corpus.storable_text)."""
    errors = []
    for name in (*REQUIRED, *OPTIONAL_TEXT, *OPTIONAL_LISTS):
        value = row.values.get(name)
        if isinstance(value, str) and (reason := unstorable(value)):
            errors.append(RowError(row.line, name, reason))
        elif isinstance(value, list):
            for position, item in enumerate(value, start=1):
                if isinstance(item, str) and (reason := unstorable(item)):
                    errors.append(RowError(row.line, name, f"item {position} {reason}"))
    return errors


@dataclass
class PlannedDocument:
    first_line: int
    values: dict
    summaries: dict = field(default_factory=dict)  # model -> (line, text, sentences or None)
    pred_keyfact: list | None = None
    keyfact: list | None = None
    word_count: int = 0


def document_words(text: str, *, dialogue: bool) -> int:
    """Words of what is said: a dialogue's speaker labels and the release's <p> markup are not words of it (the
    short/long split, paper appendix A, counts the text)."""
    if not dialogue:
        return len(text.split())
    return sum(len(text[turn.start:turn.end].split()) for turn in dialogue_turns(text))


class Planner:
    """Groups checked rows into documents as they are read, checking that rows of one uid agree and that no (uid,
    model) repeats. It keeps one copy of each document and each summary's text, not the rows: a later row of a
    document is compared with the first and let go."""

    def __init__(self, project: Project, errors: list[RowError]):
        self.project, self.errors = project, errors
        self.documents: dict[str, PlannedDocument] = {}
        self.rows = 0
        # Documents' words by text: a text repeated under other uids is counted once.
        self.words: dict[tuple[str, bool], int] = {}

    def add(self, row: Row, splitter: Splitter | None = None) -> None:
        """Plan a checked row; `splitter`: offered the texts it brings, so that splitting starts while reading."""
        self.rows += 1
        values = row.values
        planned = self.documents.get(values["uid"])
        new_text = planned is None or planned.values["document"] != values["document"]
        if not new_text:
            values["document"] = planned.values["document"]  # the first row's copy: the file's documents held once
        dialogue = values.get("input_type") == Document.InputType.DIALOGUE
        key = (values["document"], dialogue)
        if key not in self.words:
            self.words[key] = document_words(values["document"], dialogue=dialogue)
        word_count = self.words[key]
        values.setdefault("length", self.project.length_for(word_count))
        values.setdefault("redact_type", "")
        values.setdefault("reference", "")
        if planned is None:
            planned = self.documents[values["uid"]] = PlannedDocument(row.line, values, word_count=word_count)
        else:
            for name in DOCUMENT_FIELDS:
                if planned.values[name] != values[name]:
                    self.errors.append(RowError(row.line, name, f"differs from line {planned.first_line} for the "
                                                                f"same uid '{values['uid']}'"))
        model = values["model"]
        if model in planned.summaries:
            self.errors.append(RowError(row.line, "model", f"duplicate row: uid '{values['uid']}' and model "
                                                           f"'{model}' already appear on line "
                                                           f"{planned.summaries[model][0]}"))
        else:
            planned.summaries[model] = (row.line, values["summary"], values.get("sentences"))
        for name in ("pred_keyfact", "keyfact"):
            if name in values:
                if getattr(planned, name) is None:
                    setattr(planned, name, values[name])
                elif getattr(planned, name) != values[name]:
                    self.errors.append(RowError(row.line, name, f"differs from an earlier row of uid "
                                                                f"'{values['uid']}'"))
        if splitter is not None:
            if new_text:
                splitter.offer(document_kind(values), values["document"])
            if "sentences" not in values:
                splitter.offer(SUMMARY, values["summary"])


def plan_rows(rows: Iterable[Row], project: Project, errors: list[RowError]) -> dict[str, PlannedDocument]:
    """Group checked rows into documents (Planner)."""
    planner = Planner(project, errors)
    for row in rows:
        planner.add(row)
    return planner.documents


def planned_keyfacts(planned: PlannedDocument) -> list[tuple[str, str, str]]:
    """(text, origin, status) in index order: candidates first, then human key-facts (paper B.3). The choices'
    plain values: a bulk write passes a column of plain strings to the database as it is."""
    candidate = (KeyFact.Origin.IMPORTED.value, KeyFact.Status.CANDIDATE.value)
    human = (KeyFact.Origin.HUMAN.value, KeyFact.Status.ACCEPTED.value)
    facts = [(text, *candidate) for text in planned.pred_keyfact or []]
    facts += [(text, *human) for text in planned.keyfact or []]
    return facts


def compare_with_stored(documents: dict[str, PlannedDocument], project: Project, errors: list[RowError]) -> dict:
    """Find what is already stored; a disagreement with the stored data is an error, never an overwrite."""
    uids = list(documents)
    stored: dict[str, Document] = {}
    for start in range(0, len(uids), 500):
        for document in project.documents.filter(uid__in=uids[start : start + 500]):
            stored[document.uid] = document
    if not stored:
        return stored
    summaries: dict[tuple[int, str], Summary] = {}
    sentence_texts: dict[int, list[str]] = {}
    keyfacts: dict[int, list[tuple[str, str, str]]] = {}
    ids = [document.pk for document in stored.values()]
    for summary in Summary.objects.filter(document_id__in=ids):
        summaries[(summary.document_id, summary.model)] = summary
    for sentence in SummarySentence.objects.filter(summary__document_id__in=ids).order_by("summary_id", "index"):
        sentence_texts.setdefault(sentence.summary_id, []).append(sentence.text)
    for fact in KeyFact.objects.filter(document_id__in=ids).order_by("document_id", "index"):
        keyfacts.setdefault(fact.document_id, []).append((fact.text, fact.origin, fact.status))

    for uid, document in stored.items():
        planned = documents[uid]
        for name in DOCUMENT_FIELDS:
            stored_value = document.text if name == "document" else getattr(document, name)
            if stored_value != planned.values[name]:
                errors.append(RowError(planned.first_line, name, f"conflicts with the stored document '{uid}' "
                                                                 "(a re-import must not change stored data)"))
        for model, (line, text, sentences) in planned.summaries.items():
            summary = summaries.get((document.pk, model))
            if summary is None:
                continue
            if summary.text != text:
                errors.append(RowError(line, "summary", f"conflicts with the stored summary of '{uid}' by '{model}'"))
            elif sentences is not None and sentence_texts.get(summary.pk, []) != sentences:
                errors.append(RowError(line, "sentences", f"differ from the stored sentences of '{uid}' by '{model}'"))
        existing = keyfacts.get(document.pk)
        wanted = planned_keyfacts(planned)
        if existing and wanted and [fact[0] for fact in existing[: len(wanted)]] != [fact[0] for fact in wanted]:
            errors.append(RowError(planned.first_line, "pred_keyfact", f"key-facts conflict with those stored "
                                                                      f"for '{uid}'"))
    return {"documents": stored, "summaries": summaries, "keyfacts": keyfacts}


def document_kind(values: dict) -> str:
    return DIALOGUE if values["input_type"] == Document.InputType.DIALOGUE else DOCUMENT


def parse(data: "bytes | os.PathLike | BinaryIO", filename: str, project: Project, splitter: Splitter | None = None
          ) -> tuple[dict[str, PlannedDocument], list[RowError]]:
    """The file's rows, read as a stream, checked and grouped by document. `splitter`: offered each valid row's texts
    to split."""
    max_bytes = settings.FINEGRAIN_MAX_UPLOAD_BYTES
    with opened(data) as file:
        size = stream_size(file)
        if size is not None and size > max_bytes:
            raise DatasetError([RowError(0, "", f"the file is {size:,} bytes; the limit is {max_bytes:,}")])
        try:
            jsonl = guess_format(filename) == "jsonl"
        except DatasetError:
            if is_blank(file):
                raise DatasetError([RowError(0, "", EMPTY)]) from None
            raise
        lines = FileLines(file, max_bytes, keep_ends=not jsonl)
        errors: list[RowError] = []
        rows = read_jsonl(lines, errors) if jsonl else read_csv(csv_lines(lines), errors)
        planner = Planner(project, errors)
        first, header_suspect = True, False
        for row in rows:
            if first and not jsonl:
                # The header's names are on every row: if they may be unstorable, every row is checked for them.
                header_suspect = lines.suspect
            first = False
            row_errors = check_row(row, settings.FINEGRAIN_MAX_TEXT_CHARS,
                                   storable=not (lines.suspect or header_suspect))
            lines.suspect = False
            errors.extend(row_errors)
            if not row_errors:
                planner.add(row, splitter)
        if lines.blank:
            raise DatasetError([RowError(0, "", EMPTY)])
    if not planner.rows and not errors:
        errors.append(RowError(0, "", "the file holds no rows"))
    return planner.documents, errors


def split_processes() -> int:
    """How many processes split an import's texts: the operator's FINEGRAIN_SEGMENT_PROCESSES, or else the machine's
    cores less those its busy siblings in the Celery worker's pool may be using. Each pool process is owed an equal
    share (the cores over the pool's size, FINEGRAIN_WORKER_POOL, set by config.celery_app before the pool forks), so
    an import never takes a busy sibling's share, and it takes the idle ones' shares as well: on 2 cores with two pool
    processes, 2 processes alone and 1 beside a busy sibling. A sibling that starts a task during the import shares
    the cores with it until the split ends (seconds). A command, outside a worker, has every core."""
    if settings.FINEGRAIN_SEGMENT_PROCESSES > 0:
        return settings.FINEGRAIN_SEGMENT_PROCESSES
    cores = os.cpu_count() or 1
    pool = max(1, int(os.environ.get("FINEGRAIN_WORKER_POOL") or 1))
    share = max(1, cores // pool)
    busy = worker_pool.busy_siblings()
    if busy is None:
        return share
    return max(share, cores - busy * share)


def import_dataset(*, project: Project, data: "bytes | os.PathLike | BinaryIO", filename: str, progress=None,
                   planned=None) -> ImportResult:
    """Validate the whole file, then write it in one transaction. Raises DatasetError listing every problem.

    `data`: the file's bytes, its path, or a binary file object (read from where it stands, a piece at a time, and
    left open); `filename` tells the format. `planned(n)` once the file is checked, with the number of documents it
    holds; `progress(1)` after each one is segmented. Segmenting (most of an import's time) happens before the
    write's transaction, so that a job's progress is visible while it runs."""
    with cycle_collection_paused():
        return _import_dataset(project=project, data=data, filename=filename, progress=progress, planned=planned)


def _import_dataset(*, project: Project, data, filename: str, progress, planned) -> ImportResult:
    processes = split_processes()
    with opened(data) as file:
        size = stream_size(file)
        with Splitter(processes, PARALLEL_FROM_CHARS if size is None else size) as splitter:
            # Into an empty project every text is new: splitting starts while the file is still being read.
            # Otherwise only what is not stored yet is split, once that is known.
            early = splitter if not project.documents.exists() else None
            documents, errors = parse(file, filename, project, early)
            stored = compare_with_stored(documents, project, errors) if not errors else {}
            if errors:
                raise DatasetError(sorted(errors, key=lambda error: (error.line, error.field)))
            if planned:
                planned(len(documents))
            segmented = segment_new(documents, stored, progress, splitter)
    try:
        result = write_documents(project, documents, stored, segmented)
    except IntegrityError:
        # Another import of the same documents committed between our check and our write (the unique
        # constraints caught it); our transaction was rolled back whole.
        raise DatasetError([RowError(0, "", "another import wrote some of these documents at the same time; "
                                            "nothing was imported from this file: run it again")]) from None
    result.split_processes = processes
    return result


@dataclass
class Segmented:
    """Where the sentences of what is not stored yet are, as numbers (Splitter.bounds): the sentences themselves are
    made a few documents at a time while they are written."""

    documents: dict[str, tuple] = field(default_factory=dict)  # uid -> its sentences' bounds (new documents only)
    # (uid, model) -> the sentence texts the file gave, or their bounds
    summaries: dict[tuple[str, str], list[str] | tuple] = field(default_factory=dict)

    def document_sentences(self, uid: str, planned: PlannedDocument) -> list:
        values = planned.values
        return sentences_from_bounds(document_kind(values), values["document"], self.documents[uid])

    def summary_sentences(self, uid: str, model: str, text: str) -> list[str]:
        found = self.summaries[(uid, model)]
        return found if isinstance(found, list) else sentences_from_bounds(SUMMARY, text, found)


def segment_new(documents: dict[str, PlannedDocument], stored: dict, progress, splitter: Splitter) -> Segmented:
    """Split what is not stored yet into sentences: the new documents and the new summaries. Summaries that came
    with their sentences are not split again."""
    stored_documents = stored.get("documents", {})
    stored_summaries = stored.get("summaries", {})
    work = []
    for uid, planned in documents.items():
        document = stored_documents.get(uid)
        models = [model for model in planned.summaries
                  if document is None or (document.pk, model) not in stored_summaries]
        work.append((uid, planned, document is None, models))
        if document is None:
            splitter.offer(document_kind(planned.values), planned.values["document"])
        for model in models:
            _line, text, given = planned.summaries[model]
            if given is None:
                splitter.offer(SUMMARY, text)
    splitter.send()
    segmented = Segmented()
    for uid, planned, new_document, models in work:
        if new_document:
            segmented.documents[uid] = splitter.bounds(document_kind(planned.values), planned.values["document"])
        for model in models:
            _line, text, given = planned.summaries[model]
            segmented.summaries[(uid, model)] = given if given is not None else splitter.bounds(SUMMARY, text)
        if progress:
            progress(1)
    return segmented


# Documents written at a time: their sentences are made, sent and let go before the next ones'. At 10x UniSumEval
# all the sentences at once took more memory than the rest of the import; 50 a round peaked 20-25 MB below 200.
WRITE_DOCUMENTS = 50


@transaction.atomic
def write_documents(project: Project, documents: dict[str, PlannedDocument], stored: dict,
                    segmented: Segmented) -> ImportResult:
    result = ImportResult(rows=sum(len(planned.summaries) for planned in documents.values()))
    uids = list(documents)
    for start in range(0, len(uids), WRITE_DOCUMENTS):
        _write_some(project, {uid: documents[uid] for uid in uids[start:start + WRITE_DOCUMENTS]}, stored,
                    segmented, result)
    return result


def _write_some(project: Project, documents: dict[str, PlannedDocument], stored: dict, segmented: Segmented,
                result: ImportResult) -> None:
    stored_documents = stored.get("documents", {})
    stored_summaries = stored.get("summaries", {})
    stored_keyfacts = stored.get("keyfacts", {})

    new_documents = []
    for uid, planned in documents.items():
        if uid in stored_documents:
            result.documents_unchanged += 1
            continue
        values = planned.values
        new_documents.append((project.pk, uid, values["doc_id"], values["source"], values["domain"],
                              values["input_type"], values["length"], values["redact_type"], values["document"],
                              values["reference"], planned.word_count, sha256(values["document"])))
    document_keys = {uid: pk for pk, uid in insert_rows_returning(
        Document, ["project", "uid", "doc_id", "source", "domain", "input_type", "length", "redact_type", "text",
                   "reference", "word_count", "text_sha256"], new_documents, ["id", "uid"])}
    result.documents_created += len(new_documents)
    document_keys.update((uid, stored_documents[uid].pk) for uid in documents if uid in stored_documents)

    insert_rows(DocumentSentence, ["document", "index", "text", "turn", "speaker"], [
        (document_keys[uid], sentence.index, sentence.text, sentence.turn, sentence.speaker)
        for _project, uid, *_values in new_documents
        for sentence in segmented.document_sentences(uid, documents[uid])])

    new_summaries, their_sentences, keyfacts = [], [], []
    for uid, planned in documents.items():
        document_pk = document_keys[uid]
        for model, (_line, text, _given) in planned.summaries.items():
            if (document_pk, model) in stored_summaries:
                result.summaries_unchanged += 1
                continue
            new_summaries.append((document_pk, model, text, sha256(text)))
            their_sentences.append(segmented.summary_sentences(uid, model, text))
        if not stored_keyfacts.get(document_pk):
            for index, (text, origin, status) in enumerate(planned_keyfacts(planned)):
                keyfacts.append((document_pk, index, text, origin, status))
    summary_keys = {(document_pk, model): pk for pk, document_pk, model in insert_rows_returning(
        Summary, ["document", "model", "text", "text_sha256"], new_summaries, ["id", "document", "model"])}
    insert_rows(SummarySentence, ["summary", "index", "text"], [
        (summary_keys[(document_pk, model)], index, text)
        for (document_pk, model, _text, _sha), pieces in zip(new_summaries, their_sentences, strict=True)
        for index, text in enumerate(pieces)])
    insert_rows(KeyFact, ["document", "index", "text", "origin", "status"], keyfacts)
    result.summaries_created += len(new_summaries)
    result.keyfacts_created += len(keyfacts)
