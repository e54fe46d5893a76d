import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from assist.redaction import RedactionError, redact, redact_with_rules


class Command(BaseCommand):
    help = (
        "Redact PII in a dataset file before import (paper appendix E): entity spans are replaced by "
        "<CATEGORY_N>, the same entity always with the same N. Spans come from a JSON file "
        '({"uid": [[start, end, "PHONENUMBER"], ...]}) and/or the built-in rules for phone numbers, times, days '
        "and codes. Redacted documents get redact_type 'redacted'."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="a JSONL dataset file")
        parser.add_argument("--out", type=Path, required=True)
        parser.add_argument("--spans", type=Path, help="JSON file: document uid -> list of [start, end, category]")
        parser.add_argument("--rules", action="store_true", help="also find phone numbers, times, days and codes")

    def handle(self, *args, file: Path, out: Path, spans: Path | None, rules: bool, **options):
        if not spans and not rules:
            raise CommandError("give --spans FILE, --rules, or both")
        try:
            given = json.loads(spans.read_text("utf-8")) if spans else {}
            lines = file.read_text("utf-8").splitlines()
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CommandError(f"cannot read input: {exc}") from None
        rows, cache = [], {}
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                uid = row["uid"]
                if uid not in cache:
                    document_spans = [tuple(span) for span in given.get(uid, [])]
                    text = row["document"]
                    cache[uid] = (redact_with_rules(text, extra_spans=document_spans) if rules
                                  else redact(text, document_spans))
                row["document"], row["redact_type"] = cache[uid], "redacted"
            except (json.JSONDecodeError, KeyError, TypeError, ValueError, RedactionError) as exc:
                raise CommandError(f"line {number}: {exc}") from None
            rows.append(row)
        out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), "utf-8")
        self.stdout.write(self.style.SUCCESS(f"Redacted {len(cache)} documents into {out}."))
