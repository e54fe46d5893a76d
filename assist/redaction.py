"""PII redaction (paper appendix E): entities become `<CATEGORY_N>`, the same entity always with the same N.

Six categories: place, time, day, phone number, code (reservation and train numbers) and address (postcodes
included). Numbering is per category in order of first appearance, so "<PLACE_2> ... <PLACE_2>" still tells the
reader it is the same place twice: without it the relations in a dialogue are lost and annotation becomes impossible.
The output contains `<` and `>` on purpose; templates must escape it like any text.

`find_entities` is a small rule set for what rules find reliably (phone numbers, times, weekdays, booking and train
codes, UK postcodes). Places and street addresses need a person or an NER model: pass them as spans.
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


def _entity_key(text: str) -> str:
    """The same entity spelled with other case or spacing ("tuesday", "Tuesday") keeps its number."""
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


def redact(text: str, spans: Iterable[Sequence]) -> str:
    """Replace each span by `<CATEGORY_N>`."""
    numbers: dict[tuple[str, str], int] = {}
    counts: dict[str, int] = {}
    pieces, position = [], 0
    for span in validate_spans(text, spans):
        key = (span.category, _entity_key(text[span.start:span.end]))
        if key not in numbers:
            counts[span.category] = counts.get(span.category, 0) + 1
            numbers[key] = counts[span.category]
        pieces.append(text[position:span.start])
        pieces.append(f"<{span.category}_{numbers[key]}>")
        position = span.end
    pieces.append(text[position:])
    return "".join(pieces)


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
    found = [
        span for span in find_entities(text)
        if all(span.end <= other.start or span.start >= other.end for other in extra)
    ]
    return redact(text, found + extra)
