"""Defensive parsing of LLM answers.

Models wrap JSON in code fences, add a sentence before or after it, spell categories five different ways, and
sometimes skip or repeat a sentence. Everything that can be mapped safely is mapped; anything else raises ParseError
with a message precise enough to show a project manager, and the caller retries (assist.llm.base).
"""

import json
import re
from dataclasses import dataclass
from typing import Any

# The five fact-verification categories (paper appendix C, table 11); the annotation models use these slugs.
NO_ERROR = "no_error"
OUT_OF_ARTICLE = "out_of_article"
ENTITY = "entity"
RELATION = "relation"
SENTENCE = "sentence"
CATEGORIES = (NO_ERROR, OUT_OF_ARTICLE, ENTITY, RELATION, SENTENCE)
# How the prompt spells them (assist.prompts); also used in error messages.
CATEGORY_LABELS = {
    NO_ERROR: "no error",
    OUT_OF_ARTICLE: "out-of-article error",
    ENTITY: "entity error",
    RELATION: "relation error",
    SENTENCE: "sentence error",
}
_CATEGORY_KEYS = {
    "no": NO_ERROR,
    "none": NO_ERROR,
    "out of article": OUT_OF_ARTICLE,
    "entity": ENTITY,
    "relation": RELATION,
    "sentence": SENTENCE,
}
_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_NUMBER = re.compile(r"^\s*(?:sentence|statement|candidate|fact)?\s*#?\s*(\d+)\s*[.):]?\s*$", re.IGNORECASE)
_MAX_JSON_STARTS = 50  # Where to try decoding inside prose; answers are short, this only bounds pathological ones.


class ParseError(ValueError):
    """The answer cannot be used; `reason` says exactly why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class SentenceJudgement:
    """One summary sentence's category and reason; `index` is 0-based, like the stored segmentation."""

    index: int
    category: str
    reason: str


def strip_code_fences(text: str) -> str:
    """The content of the first fenced block if there is one, else the text as it is."""
    match = _FENCE.search(text)
    return match.group(1).strip() if match else text.strip()


def extract_json(text: str) -> Any:
    """The first JSON array or object in the answer, inside code fences or surrounded by prose."""
    if not text or not text.strip():
        raise ParseError("The answer is empty")
    candidates = [match.group(1) for match in _FENCE.finditer(text)] + [text]
    first_error = ""
    decoder = json.JSONDecoder()
    for candidate in candidates:
        candidate = candidate.strip()
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as error:
            first_error = first_error or f"{error.msg} at line {error.lineno} column {error.colno}"
        starts = [i for i, char in enumerate(candidate) if char in "[{"][:_MAX_JSON_STARTS]
        for start in starts:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, (list, dict)) and value:
                return value
    if not any(char in text for char in "[{"):
        raise ParseError("The answer contains no JSON")
    raise ParseError(f"The answer's JSON is malformed ({first_error})")


def as_list(value: Any, keys: tuple[str, ...], what: str) -> list[Any]:
    """Accept a bare list or an object holding one (`{"key_facts": [...]}`); `keys` are tried first."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in keys:
            if isinstance(value.get(key), list):
                return value[key]
        lists = [item for item in value.values() if isinstance(item, list)]
        if len(lists) == 1:
            return lists[0]
        return [value]  # A single judgement without its list.
    raise ParseError(f"Expected a JSON list of {what}, got {type(value).__name__}")


def normalise_category(value: Any) -> str:
    """Map "Entity Error", "entity_error", "ENTITY", "out-of-article" ... onto the five slugs."""
    if not isinstance(value, str) or not value.strip():
        raise ParseError(f"Missing category (expected one of: {', '.join(CATEGORY_LABELS.values())})")
    key = re.sub(r"[\s_\-]+", " ", value.strip().lower()).strip(" .'\"*")
    key = re.sub(r"\s*errors?$", "", key).strip()
    if key in _CATEGORY_KEYS:
        return _CATEGORY_KEYS[key]
    raise ParseError(f"Unknown category {value!r} (expected one of: {', '.join(CATEGORY_LABELS.values())})")


def item_index(item: dict[str, Any], keys: tuple[str, ...], position: int, count: int) -> int:
    """The 1-based number the model gave an item, as a 0-based index."""
    for key in keys:
        if key not in item:
            continue
        value = item[key]
        number = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, float) and value.is_integer():
            number = int(value)
        elif isinstance(value, str) and (match := _NUMBER.match(value)):
            number = int(match.group(1))
        if number is None:
            raise ParseError(f"Item {position}: {key!r} must be a number, got {str(value)[:60]!r}")
        if not 1 <= number <= count:
            raise ParseError(f"Item {position}: number {number} is outside 1..{count}")
        return number - 1
    raise ParseError(f"Item {position}: missing the number ({' or '.join(repr(k) for k in keys[:2])})")


def item_reason(item: dict[str, Any], label: str) -> str:
    reason = item.get("reason", item.get("explanation"))
    if not isinstance(reason, str) or not reason.strip():
        raise ParseError(f"{label}: empty reason")
    return " ".join(reason.split())


def numbered_items(text: str, keys: tuple[str, ...], what: str, count: int) -> list[dict[str, Any]]:
    items = as_list(extract_json(text), keys, what)
    if len(items) != count:
        raise ParseError(f"Expected {count} {what}, one per numbered item, got {len(items)}")
    for position, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise ParseError(f"Item {position}: expected an object, got {type(item).__name__}")
    return items


def parse_fact_check(text: str, n_sentences: int) -> list[SentenceJudgement]:
    """One judgement per summary sentence, in sentence order; see assist.prompts.fact_check_messages."""
    items = numbered_items(text, ("judgements", "judgments", "sentences", "results"), "judgements", n_sentences)
    judgements: dict[int, SentenceJudgement] = {}
    for position, item in enumerate(items, start=1):
        index = item_index(item, ("sentence", "sentence_id", "index", "id"), position, n_sentences)
        if index in judgements:
            raise ParseError(f"Sentence {index + 1} is judged twice")
        label = f"Sentence {index + 1}"
        try:
            category = normalise_category(item.get("category"))
        except ParseError as error:
            raise ParseError(f"{label}: {error.reason}") from None
        judgements[index] = SentenceJudgement(index=index, category=category, reason=item_reason(item, label))
    return [judgements[i] for i in range(n_sentences)]


def _clean_fact(text: str) -> str:
    text = re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s+", "", text)  # Bullets and numbering some models add.
    return " ".join(text.strip().strip("\"'").split())


def parse_keyfacts(text: str) -> list[str]:
    """A list of key-fact strings, cleaned of bullets and quotes; empty entries are dropped."""
    items = as_list(extract_json(text), ("key_facts", "key facts", "keyfacts", "facts"), "key-facts")
    facts = []
    for position, item in enumerate(items, start=1):
        if isinstance(item, dict):
            item = item.get("fact", item.get("key_fact", item.get("text")))
        if not isinstance(item, str):
            raise ParseError(f"Key-fact {position}: expected a string, got {type(item).__name__}")
        if cleaned := _clean_fact(item):
            facts.append(cleaned)
    if not facts:
        raise ParseError("The answer lists no key-facts")
    return facts


def yes_no(value: Any, label: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().strip(".!\"'").lower()
        if word in ("yes", "y", "true", "accept", "useful"):
            return True
        if word in ("no", "n", "false", "reject", "not useful"):
            return False
    raise ParseError(f"{label}: the response must be yes or no, got {str(value)[:40]!r}")


def parse_votes(text: str, n_candidates: int) -> list[tuple[bool, str]]:
    """(accept, reason) per candidate key-facts, in candidate order; see assist.prompts.keyfact_vote_messages."""
    items = numbered_items(text, ("votes", "answers", "results"), "votes", n_candidates)
    votes: dict[int, tuple[bool, str]] = {}
    for position, item in enumerate(items, start=1):
        index = item_index(item, ("candidate", "statement_id", "statement", "id", "index"), position, n_candidates)
        if index in votes:
            raise ParseError(f"Candidate {index + 1} is voted on twice")
        label = f"Candidate {index + 1}"
        answer = item.get("response", item.get("answer", item.get("useful")))
        votes[index] = (yes_no(answer, label), item_reason(item, label))
    return [votes[i] for i in range(n_candidates)]


def _one_sentence(text: str, keys: tuple[str, ...], what: str) -> str:
    """A single sentence from `{"<key>": ...}` (the first of `keys` present) or, failing that, a one-line answer."""
    try:
        value = extract_json(text)
    except ParseError:
        value = None
    if isinstance(value, dict):
        value = next((value[key] for key in keys if key in value), None)
    elif value is None:
        plain = strip_code_fences(text)
        value = plain if plain and "\n" not in plain and not plain.startswith(("{", "[")) else None
    if not isinstance(value, str) or not value.strip():
        raise ParseError(f"The answer has no {what}")
    return " ".join(value.strip().strip("\"'").split())


def parse_paraphrase(text: str) -> str:
    """The rewritten sentence, from `{"paraphrase": ...}` or, failing that, a one-line plain answer."""
    return _one_sentence(text, ("paraphrase", "sentence"), "paraphrase")


MAX_REASON_CHARS = 400  # "One short sentence": anything longer is an essay the page would show as a wall of text.


def parse_reason(text: str) -> str:
    """The explanation, from `{"reason": ...}` or, failing that, a one-line plain answer; see
    assist.prompts.judgment_reason_messages."""
    reason = _one_sentence(text, ("reason", "explanation"), "reason")
    if len(reason) > MAX_REASON_CHARS:
        raise ParseError(f"The reason is longer than one short sentence ({len(reason)} characters)")
    return reason
