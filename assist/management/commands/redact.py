import csv
import io
import json
import os
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from assist.redaction import RedactionError, redact_document_rows
from corpus.importing import (
    OPTIONAL_LISTS,
    DatasetError,
    RowError,
    check_row,
    decode,
    guess_format,
    read_csv,
    read_jsonl,
)


class Command(BaseCommand):
    help = (
        "Redact PII in a dataset file before import (paper appendix E): entities become <CATEGORY_N>, the same "
        "entity with the same N in the document, its reference, its key-facts and every summary of it. Spans for "
        'the documents come from a JSON file ({"uid": [[start, end, "PLACE"], ...]}) and/or the built-in rules '
        "for phone numbers, times, days, codes and postcodes. Documents where something was replaced get "
        "redact_type 'redacted'. Input and output are JSONL or CSV, as import_dataset reads them (by extension); "
        "nothing is written if any row is bad."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="a .jsonl or .csv dataset file")
        parser.add_argument("--out", type=Path, required=True, help="the redacted file (.jsonl or .csv)")
        parser.add_argument("--spans", type=Path, help="JSON file: document uid -> list of [start, end, category]")
        parser.add_argument("--rules", action="store_true", help="also find phone numbers, times, days and codes")

    def handle(self, *args, file: Path, out: Path, spans: Path | None, rules: bool, verbosity: int, **options):
        if not spans and not rules:
            raise CommandError("give --spans FILE, --rules, or both")
        try:
            out_format = guess_format(out.name)
            given = read_spans(spans) if spans else {}
            rows, header = read_rows(file)
        except DatasetError as exc:
            for error in exc.errors:
                self.stderr.write(f"{file.name}: {error}")
            raise CommandError(f"nothing written: {len(exc.errors)} problem(s)") from None

        documents: dict[str, list] = {}
        for line, values in rows:
            documents.setdefault(values["uid"], []).append((line, values))
        unknown = sorted(set(given) - set(documents))
        if unknown:
            raise CommandError(f"nothing written: --spans names uid(s) not in {file.name}: {', '.join(unknown[:10])}")

        redacted, marked, errors = [], 0, []
        for uid, group in tqdm(documents.items(), desc="redacting", unit="doc", disable=verbosity < 1,
                               file=self.stderr._out):
            try:
                result, replaced = redact_document_rows([values for _, values in group], spans=given.get(uid, []),
                                                        rules=rules)
            except RedactionError as exc:
                errors.append(RowError(group[0][0], "", str(exc)))
                continue
            marked += replaced > 0
            redacted.extend(zip((line for line, _ in group), result))
        if errors:
            for error in errors:
                self.stderr.write(f"{file.name}: {error}")
            raise CommandError(f"nothing written: {len(errors)} problem(s)")
        redacted.sort(key=lambda item: item[0])  # The input's row order.
        try:
            write_atomically(out, [row for _, row in redacted], out_format, header)
        except OSError as exc:
            raise CommandError(f"cannot write {out}: {exc.strerror or exc}") from None
        self.stdout.write(self.style.SUCCESS(
            f"Redacted {marked} of {len(documents)} documents ({len(redacted)} rows) into {out}."))


def read_spans(path: Path) -> dict[str, list]:
    try:
        given = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError([RowError(0, "", f"cannot read --spans {path}: {exc}")]) from None
    if not isinstance(given, dict) or not all(isinstance(spans, list) for spans in given.values()):
        raise DatasetError([RowError(0, "", f"--spans {path} must map each uid to a list of [start, end, category]")])
    return given


def read_rows(path: Path) -> tuple[list[tuple[int, dict]], list[str]]:
    """Rows as import_dataset reads and checks them, and the CSV header (empty for JSONL) to write back."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DatasetError([RowError(0, "", f"cannot read {path}: {exc.strerror}")]) from None
    text = decode(data)
    csv_input = guess_format(path.name) == "csv"
    errors: list[RowError] = []
    rows = []
    for row in (read_csv if csv_input else read_jsonl)(text, errors):
        row_errors = check_row(row, settings.FINEGRAIN_MAX_TEXT_CHARS)
        errors.extend(row_errors)
        if not row_errors:
            rows.append((row.line, row.values))
    if not rows and not errors:
        errors.append(RowError(0, "", "the file holds no rows"))
    if errors:
        raise DatasetError(sorted(errors, key=lambda error: (error.line, error.field)))
    header = next(csv.reader(io.StringIO(text, newline=""))) if csv_input else []
    return rows, header


def write_atomically(out: Path, rows: list[dict], out_format: str, header: list[str]) -> None:
    """Write next to `out`, then rename: a failed run leaves no half-written file and an existing `out` intact."""
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = None
    try:
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", newline="", dir=out.parent, prefix=f".{out.name}.",
                                         delete=False) as handle:
            temporary = handle.name
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)  # A file written directly gets these, not the temp file's 0600.
            if out_format == "csv":
                write_csv(handle, rows, header)
            else:
                handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        os.replace(temporary, out)
    except BaseException:
        if temporary and os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_csv(handle, rows: list[dict], header: list[str]) -> None:
    """The import's CSV format: one column per field, list fields as JSON arrays in their cells.

    Cells are written as given, not neutralised against spreadsheet formulas: this file is the import's input, and a
    leading quote would become part of the document or summary that annotators read.
    """
    columns = list(header)
    for row in rows:
        columns += [name for name in row if name not in columns]
    writer = csv.DictWriter(handle, fieldnames=columns, restval="")
    writer.writeheader()
    for row in rows:
        writer.writerow({name: json.dumps(value, ensure_ascii=False) if name in OPTIONAL_LISTS else value
                         for name, value in row.items()})
