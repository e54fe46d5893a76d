"""Parsing the LLM evaluators' answers, on top of assist.parsing (fences, prose around the JSON, numbering).

Anything that cannot be mapped safely raises ParseError with a precise reason; the caller retries a bounded number
of times (assist.llm.base.complete_with_retries) and records the last reason on the score.
"""

import re
from typing import Any

from assist.parsing import ParseError, as_list, extract_json, item_index, item_reason, numbered_items, yes_no

from .prompts import FINESURE_CATEGORIES

_LABELS = {label: slug for slug, (label, _) in FINESURE_CATEGORIES.items()}
_SHORT = {re.sub(r"\s*error$", "", label): slug for label, slug in _LABELS.items()}
# Our prompt renames some of FineSurE's categories; a model that knows the paper answers in the paper's words (its
# prompt: "circumstantial error", "linking error"; its tables: "CirE", "LinkE", FRANK's abbreviations) or in plain
# synonyms. Each maps to one category without doubt; a word that could mean two (e.g. "hallucination", which any
# of the seven errors may be called) is left out, so that the model is asked again rather than guessed for.
_SHORT.update({
    "no": "no_error", "none": "no_error", "no factual": "no_error", "correct": "no_error", "faithful": "no_error",
    "supported": "no_error",
    "out of article": "out_of_context", "out of document": "out_of_context", "out of source": "out_of_context",
    "extrinsic": "out_of_context", "oute": "out_of_context",
    "prede": "predicate", "verb": "predicate",
    "ente": "entity",
    "circumstantial": "circumstance", "circumstances": "circumstance", "cire": "circumstance",
    "coref": "coreference", "corefe": "coreference", "reference": "coreference", "pronoun": "coreference",
    "link": "discourse_link", "linking": "discourse_link", "discourse": "discourse_link",
    "discourse linking": "discourse_link", "linke": "discourse_link",
    "grammar": "grammatical", "ungrammatical": "grammatical", "grame": "grammatical",
    "others": "other", "othere": "other",
})
SENTENCE_KEYS = ("sentence", "sentence_id", "line", "line number", "index", "id")
KEYFACT_KEYS = ("key fact", "keyfact", "key_fact", "fact", "id", "index")
MAX_CLAIM_PART_CHARS = 200  # A claim is a few words; anything longer is a paragraph pasted in the wrong place.


def finesure_category(value: Any, label: str) -> str:
    """Map "Entity Error", "out-of-context", "DISCOURSE_LINK", "linking error", "CirE" ... onto FineSurE's nine
    slugs."""
    if not isinstance(value, str) or not value.strip():
        raise ParseError(f"{label}: missing category")
    key = re.sub(r"[\s_\-]+", " ", value.strip().lower()).strip(" .'\"*")
    key = re.sub(r"\s*\([^()]*\)$", "", key)  # "circumstantial error (CirE)": the name before its gloss
    key = re.sub(r"\s*errors?$", "", key).strip()
    if key in _SHORT:
        return _SHORT[key]
    raise ParseError(f"{label}: unknown category {value!r} (expected one of: {', '.join(_LABELS)})")


def parse_finesure_fact_check(text: str, n_sentences: int) -> list[tuple[str, str]]:
    """(category slug, reason) per summary sentence, in sentence order."""
    items = numbered_items(text, ("sentences", "judgements", "judgments", "results"), "judgements", n_sentences)
    found: dict[int, tuple[str, str]] = {}
    for position, item in enumerate(items, start=1):
        index = item_index(item, SENTENCE_KEYS, position, n_sentences)
        label = f"Sentence {index + 1}"
        if index in found:
            raise ParseError(f"{label} is judged twice")
        category = finesure_category(item.get("category", item.get("error type")), label)
        found[index] = (category, item_reason(item, label))
    return [found[i] for i in range(n_sentences)]


def _sentence_numbers(value: Any, label: str, n_sentences: int) -> list[int]:
    """0-based sentence indices from [1, 3], "1, 3", 2 or "[2]"; duplicates dropped, order kept."""
    if value is None:
        return []
    if isinstance(value, bool):
        raise ParseError(f"{label}: sentence numbers expected, got {value!r}")
    if isinstance(value, (int, float)):
        values = [value]
    elif isinstance(value, str):
        values = re.findall(r"-?\d+", value)
    elif isinstance(value, list):
        values = value
    else:
        raise ParseError(f"{label}: sentence numbers expected, got {type(value).__name__}")
    numbers = []
    for raw in values:
        try:
            number = int(raw) if not isinstance(raw, float) or raw.is_integer() else None
        except (TypeError, ValueError):
            number = None
        if number is None or isinstance(raw, bool):
            raise ParseError(f"{label}: {raw!r} is not a sentence number")
        if not 1 <= number <= n_sentences:
            raise ParseError(f"{label}: sentence {number} is outside 1..{n_sentences}")
        if number - 1 not in numbers:
            numbers.append(number - 1)
    return numbers


def parse_keyfact_alignment(text: str, n_keyfacts: int, n_sentences: int) -> list[list[int]]:
    """Per key-fact, the 0-based indices of the summary sentences that convey it; [] = not conveyed.

    A "yes" must name at least one sentence: FineSurE's scores count the (key-fact, sentence) edges (eq. 2), and a
    "yes" without its sentences gives no edge, so it is asked again rather than silently read as "no".
    """
    items = numbered_items(text, ("key facts", "keyfacts", "key_facts", "alignment", "results"), "key-facts",
                           n_keyfacts)
    found: dict[int, list[int]] = {}
    for position, item in enumerate(items, start=1):
        index = item_index(item, KEYFACT_KEYS, position, n_keyfacts)
        label = f"Key-fact {index + 1}"
        if index in found:
            raise ParseError(f"{label} is answered twice")
        aligned = yes_no(item.get("response", item.get("answer", item.get("inferred"))), label)
        lines = item.get("sentences", item.get("line number", item.get("line numbers", item.get("lines"))))
        numbers = _sentence_numbers(lines, label, n_sentences) if aligned else []
        if aligned and not numbers:
            raise ParseError(f"{label}: 'yes' without the numbers of the sentences that convey it")
        found[index] = numbers
    return [found[i] for i in range(n_keyfacts)]


def _claim(value: Any, label: str) -> tuple[str, str] | None:
    """["subject", "description"] or {"subject": ..., "description": ...}; None for an empty pair."""
    if isinstance(value, dict):
        value = [value.get("subject"), value.get("description", value.get("predicate"))]
    if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(isinstance(part, str) for part in value):
        raise ParseError(f"{label}: a claim must be a pair of strings [subject, description], got {str(value)[:60]!r}")
    subject, description = (" ".join(part.split()).strip("\"'") for part in value)
    if not subject and not description:
        return None
    if len(subject) > MAX_CLAIM_PART_CHARS or len(description) > MAX_CLAIM_PART_CHARS:
        raise ParseError(f"{label}: a claim is a few words, got {len(subject) + len(description)} characters")
    return subject, description


def _claims(values: Any, label: str) -> list[tuple[str, str]]:
    if not isinstance(values, list):
        raise ParseError(f"{label}: expected a list of claims, got {type(values).__name__}")
    claims = []
    for position, value in enumerate(values, start=1):
        claim = _claim(value, f"{label}, claim {position}")
        if claim is not None and claim not in claims:
            claims.append(claim)
    return claims


def parse_claims(text: str) -> list[tuple[str, str]]:
    """The claim pairs of a source passage; an empty list is a valid answer (a passage without claims)."""
    value = extract_json(text)
    if isinstance(value, dict):
        value = as_list(value, ("claims", "tuples", "facts"), "claims")
    return _claims(value, "Answer")


def parse_sentence_claims(text: str, n_sentences: int) -> list[list[tuple[str, str]]]:
    """Per summary sentence, its claim pairs, in sentence order."""
    items = numbered_items(text, ("sentences", "claims", "results"), "sentences", n_sentences)
    found: dict[int, list[tuple[str, str]]] = {}
    for position, item in enumerate(items, start=1):
        index = item_index(item, SENTENCE_KEYS, position, n_sentences)
        label = f"Sentence {index + 1}"
        if index in found:
            raise ParseError(f"{label} is listed twice")
        found[index] = _claims(item.get("claims", item.get("tuples")), label)
    return [found[i] for i in range(n_sentences)]
