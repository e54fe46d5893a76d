"""PII redaction (paper appendix E): entities become `<CATEGORY_N>`, the same entity always with the same N.

Six categories: place, time, day, phone number, code (reservation and train numbers) and address (postcodes
included). Numbering is per category in order of first appearance, so "<PLACE_2> ... <PLACE_2>" still tells the
reader it is the same place twice: without it the relations in a dialogue are lost and annotation becomes impossible.
The output contains `<` and `>` on purpose; templates must escape it like any text.

`find_entities` is a small rule set for what rules find reliably (phone numbers, times, weekdays, booking and train
codes, UK postcodes). Places and street addresses need a person or an NER model: pass them as spans.

A document is redacted together with everything shown next to it (`redact_document_rows`): its reference, its
key-facts and every summary of it share one entity -> placeholder map, so "<PLACE_2>" in a summary is the place
that is "<PLACE_2>" in the source; an entity redacted once is redacted wherever it recurs.
"""

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

PLACE = "PLACE"
TIME = "TIME"
DAY = "DAY"
PHONENUMBER = "PHONENUMBER"
CODE = "CODE"
ADDRESS = "ADDRESS"
CATEGORIES = (PLACE, TIME, DAY, PHONENUMBER, CODE, ADDRESS)


class RedactionError(ValueError):
    """The spans cannot be applied to this text."""


class Span(NamedTuple):
    start: int
    end: int
    category: str


def normalise_category(category: str) -> str:
    """"phone number", "Phone-Number", "PHONENUMBER" are the same category."""
    name = re.sub(r"[^A-Z]", "", str(category).upper())
    if name not in CATEGORIES:
        raise RedactionError(f"Unknown redaction category {category!r}: expected one of {', '.join(CATEGORIES)}")
    return name


def _entity_key(category: str, text: str) -> str:
    """The same entity spelled with other case or spacing ("tuesday", "Tuesday") keeps its number."""
    if category == PHONENUMBER:
        return re.sub(r"[^\d+]", "", text)  # "01223 462983" and "01223462983" are one number.
    return " ".join(text.split()).casefold()


def validate_spans(text: str, spans: Iterable[Sequence]) -> list[Span]:
    """Spans sorted by position, categories normalised; out-of-range, empty or overlapping spans are refused."""
    checked = []
    for raw in spans:
        try:
            start, end, category = raw
        except (TypeError, ValueError):
            raise RedactionError(f"A span is (start, end, category), got {raw!r}") from None
        if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool) or isinstance(end, bool):
            raise RedactionError(f"Span {raw!r}: start and end must be integers")
        if not 0 <= start < end <= len(text):
            raise RedactionError(f"Span {raw!r} is outside the text (0..{len(text)}) or empty")
        checked.append(Span(start, end, normalise_category(category)))
    checked.sort()
    for previous, span in zip(checked, checked[1:]):
        if span.start < previous.end:
            raise RedactionError(
                f"Spans {tuple(previous)} ({text[previous.start:previous.end]!r}) and {tuple(span)} "
                f"({text[span.start:span.end]!r}) overlap"
            )
    return checked


_PLACEHOLDER = re.compile(rf"<({'|'.join(CATEGORIES)})_(\d+)>")


class Placeholders:
    """One entity -> placeholder map, shared by every text of a document so an entity reads the same everywhere.

    Placeholders already in the texts (a file redacted before) are counted, so a new entity never reuses their N.
    """

    def __init__(self, texts: Iterable[str] = ()):
        self.numbers: dict[tuple[str, str], int] = {}
        self.counts: dict[str, int] = {}
        # Spelling (whitespace-normalised, casefolded) -> category: what `occurrences` looks for in other texts.
        self.spellings: dict[str, str] = {}
        self.replaced = 0
        for text in texts:
            for match in _PLACEHOLDER.finditer(text):
                category, number = match.group(1), int(match.group(2))
                self.counts[category] = max(self.counts.get(category, 0), number)

    def placeholder(self, category: str, entity: str) -> str:
        key = (category, _entity_key(category, entity))
        if key not in self.numbers:
            self.counts[category] = self.counts.get(category, 0) + 1
            self.numbers[key] = self.counts[category]
        self.spellings.setdefault(" ".join(entity.split()).casefold(), category)
        self.replaced += 1
        return f"<{category}_{self.numbers[key]}>"

    def occurrences(self, text: str, also: Iterable[tuple[str, str]] = ()) -> list[Span]:
        """Where entities already redacted (and `also`: (category, entity) pairs) recur in `text`, as whole words."""
        spellings = dict(self.spellings)
        for category, entity in also:
            spellings.setdefault(" ".join(entity.split()).casefold(), category)
        spellings = {spelling: category for spelling, category in spellings.items() if spelling}
        if not spellings:
            return []
        # Longest first, so "Lakeside Inn" wins over "Lakeside" at the same position.
        ordered = sorted(spellings, key=len, reverse=True)
        alternatives = [r"\s+".join(map(re.escape, spelling.split())) for spelling in ordered]
        pattern = re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)
        found = []
        for match in pattern.finditer(text):
            category = spellings.get(" ".join(match.group().split()).casefold())
            if category is None:  # Case-insensitive matching and casefold disagree on a few letters.
                category = next(spellings[spelling] for spelling, alternative in zip(ordered, alternatives)
                                if re.fullmatch(alternative, match.group(), re.IGNORECASE))
            found.append(Span(match.start(), match.end(), category))
        return found


def _apply(text: str, spans: Iterable[Span], placeholders: Placeholders) -> str:
    pieces, position = [], 0
    for span in spans:
        pieces.append(text[position:span.start])
        pieces.append(placeholders.placeholder(span.category, text[span.start:span.end]))
        position = span.end
    pieces.append(text[position:])
    return "".join(pieces)


def _outside(spans: Iterable[Span], taken: Sequence[Span]) -> list[Span]:
    return [span for span in spans if all(span.end <= other.start or span.start >= other.end for other in taken)]


def redact(text: str, spans: Iterable[Sequence], placeholders: Placeholders | None = None) -> str:
    """Replace each span by `<CATEGORY_N>`."""
    return _apply(text, validate_spans(text, spans), placeholders or Placeholders([text]))


# --- Rules. Each pattern is tried everywhere; overlaps go to the longer match, then to the earlier rule.
_AM_PM = r"(?:[ap]m\b|[ap]\.m\.)"  # "9am", "9 a.m."; never the full stop after "9am."
_WEEKDAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_RULES: list[tuple[str, re.Pattern[str]]] = [
    # 01223 247015, +44 1223 247015, (555) 123-4567: checked for 8 to 15 digits below.
    (PHONENUMBER, re.compile(r"(?<![\w+(.,])(?:\+\d{1,3}[ -]?)?(?:\(\d{1,5}\)[ -]?)?\d(?:[\d -]*\d)?(?![\w.,]\d)")),
    # UK postcodes as in MultiWOZ ("cb21ab", "CB2 1TN").
    (ADDRESS, re.compile(r"\b[A-Za-z]{1,2}\d[A-Za-z\d]?\s?\d[A-Za-z]{2}\b")),
    (TIME, re.compile(rf"\b(?:[01]?\d|2[0-3])[:.][0-5]\d(?:\s?{_AM_PM})?(?!\d)", re.IGNORECASE)),
    (TIME, re.compile(rf"\b(?:1[0-2]|0?[1-9])\s?{_AM_PM}", re.IGNORECASE)),
    (DAY, re.compile(rf"\b(?:{_WEEKDAYS})s?\b", re.IGNORECASE)),
    # Booking references and train ids: capitals and digits, at least two of each (TR8199, R6MSYW4P).
    (CODE, re.compile(r"\b(?=(?:[A-Z0-9]*[A-Z]){2})(?=(?:[A-Z0-9]*\d){2})[A-Z0-9]{5,}\b")),
]
_YEAR_RANGE = re.compile(r"^\d{4}\s?-\s?\d{4}$")


def _plausible(category: str, match: str) -> bool:
    if category == PHONENUMBER:
        digits = sum(char.isdigit() for char in match)
        return 8 <= digits <= 15 and not _YEAR_RANGE.match(match)
    if category == TIME and "." in match.split()[0][:5] and not re.search(r"[ap]\.?m", match, re.IGNORECASE):
        return False  # "12.50" is a price or a score far more often than a time; "12.50pm" is a time.
    return True


def _resolve(candidates: Iterable[tuple[Span, int]]) -> list[Span]:
    """Greedy choice of non-overlapping spans: longer first, then the earlier rule."""
    chosen: list[Span] = []
    for span, _ in sorted(candidates, key=lambda item: (-(item[0].end - item[0].start), item[1], item[0].start)):
        if all(span.end <= other.start or span.start >= other.end for other in chosen):
            chosen.append(span)
    return sorted(chosen)


def find_entities(text: str) -> list[Span]:
    """Spans the rules recognise, sorted and non-overlapping."""
    candidates = []
    for priority, (category, pattern) in enumerate(_RULES):
        for match in pattern.finditer(text):
            if _plausible(category, match.group()):
                candidates.append((Span(match.start(), match.end(), category), priority))
    return _resolve(candidates)


def redact_with_rules(text: str, extra_spans: Iterable[Sequence] = ()) -> str:
    """Redact what the rules find plus `extra_spans` (places, streets marked by a person); those win any overlap."""
    extra = validate_spans(text, extra_spans)
    return _apply(text, sorted(_outside(find_entities(text), extra) + extra), Placeholders([text]))


def redact_text(text: str, placeholders: Placeholders, *, spans: Iterable[Sequence] = (), rules: bool = False) -> str:
    """Redact one text of a document with the document's map.

    What is replaced: the given spans; then every recurrence of an entity redacted anywhere in the document so far or
    marked in this text; then, with `rules`, what the rules find. Earlier kinds win overlaps: a person's span over a
    rule's guess, and an entity seen in the source over a rule's reading of a summary.
    """
    chosen = validate_spans(text, spans)
    marked = [(span.category, text[span.start:span.end]) for span in chosen]
    chosen += _outside(placeholders.occurrences(text, also=marked), chosen)
    if rules:
        chosen += _outside(find_entities(text), chosen)
    return _apply(text, sorted(chosen), placeholders)


# Fields of a dataset row (the import's field names) that are shown next to the document.
REDACTED_LIST_FIELDS = ("pred_keyfact", "keyfact")


def redact_document_rows(rows: Sequence[dict], *, spans: Iterable[Sequence] = (),
                         rules: bool = False) -> tuple[list[dict], int]:
    """One document's rows (one per summary, sharing a uid), redacted with one map: new rows, entities replaced.

    The source goes first, so numbers follow its order; then the reference, the key-facts, and each summary with its
    `sentences`. Given sentences are redacted one by one rather than recomputed: labels refer to their indices, so
    their number and order must not change. `redact_type` becomes "redacted" only where something was replaced.
    Rows of one uid must agree on the document and the reference.
    """
    first = rows[0]
    for row in rows[1:]:
        for name in ("document", "reference"):
            if row.get(name, "") != first.get(name, ""):
                raise RedactionError(f"rows of uid {first['uid']!r} differ in '{name}': one document, one {name}")
    texts = [first["document"], first.get("reference") or ""]
    for row in rows:
        texts += [row["summary"], *(row.get("sentences") or [])]
        texts += [fact for name in REDACTED_LIST_FIELDS for fact in row.get(name) or []]
    placeholders = Placeholders(texts)
    document = redact_text(first["document"], placeholders, spans=spans, rules=rules)
    shared: dict[tuple[str, str], str] = {}

    def once(name: str, text: str) -> str:
        # Key-facts repeat on every row of the document: each text is redacted once, the same way.
        if (name, text) not in shared:
            shared[(name, text)] = redact_text(text, placeholders, rules=rules)
        return shared[(name, text)]

    reference = once("reference", first["reference"]) if first.get("reference") else first.get("reference")
    for row in rows:
        for name in REDACTED_LIST_FIELDS:
            for fact in row.get(name) or []:
                once(name, fact)
    redacted = []
    for row in rows:
        row = dict(row, document=document)
        if "reference" in row:
            row["reference"] = reference
        for name in REDACTED_LIST_FIELDS:
            if row.get(name):
                row[name] = [once(name, fact) for fact in row[name]]
        row["summary"] = redact_text(row["summary"], placeholders, rules=rules)
        if row.get("sentences"):
            row["sentences"] = [redact_text(sentence, placeholders, rules=rules) for sentence in row["sentences"]]
        redacted.append(row)
    if placeholders.replaced:
        for row in redacted:
            row["redact_type"] = "redacted"
    return redacted, placeholders.replaced
