"""Paraphrases of key-facts, for key-fact alignment attention checks (paper G.3).

One KA check shows a fake summary sentence that restates a human key-fact: an attentive annotator must align the two.
The sentence must therefore say the same thing in other words, adding and dropping nothing. With an LLM configured,
the LLM writes it; with only the offline backend, `rule_paraphrase` does, deterministically for a given seed, with
meaning-preserving rewrites only: a passive for simple "X <verb> Y" facts, a fronted time phrase, a fronted
"because" clause, a small synonym table, and a neutral attribution ("..., according to the document").
"""

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from assist.config import backend_config
from assist.llm.base import ChatBackend, RetryPolicy, SentenceLabeler, complete_with_retries
from assist.parsing import ParseError, parse_paraphrase
from assist.prompts import PARAPHRASE_VERSION, paraphrase_messages

RULES_VERSION = "rule-paraphrase/v1"

# Past tense -> participle for transitive verbs whose passive keeps the meaning.
PASSIVE_VERBS = {
    "acquired": "acquired", "approved": "approved", "announced": "announced", "beat": "beaten", "booked": "booked",
    "bought": "bought", "built": "built", "chose": "chosen", "defeated": "defeated", "designed": "designed",
    "founded": "founded", "funded": "funded", "hired": "hired", "launched": "launched", "led": "led",
    "opposed": "opposed", "organised": "organised", "organized": "organized", "praised": "praised",
    "published": "published", "received": "received", "recommended": "recommended", "rejected": "rejected",
    "released": "released", "reserved": "reserved", "scored": "scored", "signed": "signed", "sold": "sold",
    "supported": "supported", "tested": "tested", "visited": "visited", "won": "won", "wrote": "written",
}
# Interchangeable in the contexts key-facts use; only words without a second, different sense.
SYNONYMS = {
    "approximately": "about", "assist": "help", "began": "started", "big": "large", "booked": "reserved",
    "cheap": "inexpensive", "cheaper": "less expensive", "completed": "finished", "departs": "leaves",
    "finished": "completed", "help": "assist", "helps": "assists", "inexpensive": "cheap", "large": "big",
    "leaves": "departs", "many": "numerous", "purchased": "bought", "bought": "purchased", "rapidly": "quickly",
    "quickly": "rapidly", "requested": "asked for", "reserved": "booked", "said": "stated", "says": "states",
    "started": "began", "stated": "said", "states": "says", "wants": "would like",
}
OBJECT_PRONOUNS = {"i": "me", "he": "him", "she": "her", "we": "us", "they": "them"}
# Words that start a sentence without being names, so lowercasing them mid-sentence is safe.
FUNCTION_WORDS = {
    "a", "an", "the", "this", "that", "these", "those", "it", "its", "there", "their", "his", "her", "our", "some",
    "many", "most", "all", "both", "each", "every", "several", "few", "one", "two", "three", "he", "she", "they",
    "we", "you", "patients", "people", "researchers", "users", "customers",
}
ADVERBIAL_WORDS = {"on", "in", "at", "during", "since", "before", "yesterday", "today", "tomorrow", "because"}
NUMBERS = {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "several", "many", "both"}
PREPOSITIONS = {"in", "on", "at", "to", "for", "from", "with", "by", "about", "into", "of", "over", "under", "after"}
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_TIME_PHRASE = re.compile(
    rf"^(?P<main>.+?) (?P<phrase>(?:in|on|during|since) (?:(?:early|late|mid) )?(?:{_MONTHS}|{_DAYS}|\d{{4}}"
    rf"|the (?:morning|afternoon|evening|summer|winter|spring|autumn)|(?:last|next) (?:year|month|week))"
    rf"(?: \d{{4}})?)$"
)
_BECAUSE = re.compile(r"^(?P<main>[^,]+?),? because (?P<cause>[^,]+)$")
PREFIX_FRAMES = ("It is reported that {}.", "The document states that {}.")
SUFFIX_FRAMES = ("{}, according to the document.", "{}, as the text reports.")


def _strip(sentence: str) -> str:
    return " ".join(sentence.split()).rstrip(".!; ")


def _lower_first(text: str) -> str:
    """Lowercase a leading function word ("The" -> "the"); leave names ("Mara Voss") alone."""
    first = text.split(" ", 1)[0]
    if first.lower() in FUNCTION_WORDS:
        return first.lower() + text[len(first):]
    return text


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _movable(phrase: str) -> bool:
    """Can this phrase leave the start of the sentence? Only if its capital is safe to drop or surely a name's."""
    words = phrase.split()
    first = words[0]
    if first.lower() in FUNCTION_WORDS or first.lower() in OBJECT_PRONOUNS or not first[0].isupper():
        return True
    if len(words) > 1 and words[1][0].isupper():
        return True  # "Tom Hale", "Lake Garda hotels".
    # A lone capitalised word: "Riverside beat" is a name, "Scientists tested" or "Prices are" probably not.
    return not first.lower().endswith("s")


def _passive(fact: str) -> str | None:
    for verb, participle in PASSIVE_VERBS.items():
        match = re.match(rf"^(?P<subject>[^,]+?) {verb} (?P<object>[^,]+)$", fact)
        if not match:
            continue
        subject, obj = match["subject"], match["object"]
        object_words = obj.lower().split()
        if (
            object_words[0] in PREPOSITIONS
            or ADVERBIAL_WORDS & set(object_words)  # "beat Northgate on Saturday": the time belongs to the verb.
            or len(subject.split()) > 6
            or not _movable(subject)
        ):
            return None
        head = next((w for w, nxt in zip(object_words, object_words[1:] + [""]) if nxt in PREPOSITIONS or not nxt))
        plural = (head.endswith("s") and not head.endswith(("ss", "us", "is"))) or object_words[0] in NUMBERS
        agent = OBJECT_PRONOUNS.get(subject.lower(), _lower_first(subject))
        return f"{_upper_first(obj)} {'were' if plural else 'was'} {participle} by {agent}"
    return None


def _front_time_phrase(fact: str) -> str | None:
    match = _TIME_PHRASE.match(fact)
    if not match or not _movable(match["main"]):
        return None
    return f"{_upper_first(match['phrase'])}, {_lower_first(match['main'])}"


def _front_because(fact: str) -> str | None:
    match = _BECAUSE.match(fact)
    if not match or not _movable(match["main"]):
        return None
    return f"Because {match['cause']}, {_lower_first(match['main'])}"


def _synonyms(fact: str, rng: random.Random) -> str:
    def swap(match: re.Match[str]) -> str:
        word = match.group()
        replacement = SYNONYMS[word.lower()]
        if rng.random() < 0.2:  # Vary which words change, so two checks from one fact differ.
            return word
        return _upper_first(replacement) if word[0].isupper() else replacement

    pattern = r"\b(?:" + "|".join(sorted(SYNONYMS, key=len, reverse=True)) + r")\b"
    return re.sub(pattern, swap, fact, flags=re.IGNORECASE)


def _same(a: str, b: str) -> bool:
    return re.sub(r"\W+", " ", a).strip().lower() == re.sub(r"\W+", " ", b).strip().lower()


def rule_paraphrase(keyfact: str, *, seed: int = 0) -> str:
    """A reworded sentence entailing `keyfact`; the same (keyfact, seed) always gives the same sentence."""
    fact = _strip(keyfact)
    if not fact:
        raise ValueError("Cannot paraphrase an empty key-fact")
    rng = random.Random(f"{seed}\x1f{fact}")
    structural = [result for rule in (_passive, _front_time_phrase, _front_because) if (result := rule(fact))]
    sentence = rng.choice(structural) if structural else fact
    sentence = _synonyms(sentence, rng)
    if _same(sentence, fact) or rng.random() < 0.5:
        # A prefix frame needs the sentence's first word in lower case: only when that cannot hurt a name.
        if sentence.split()[0].lower() in FUNCTION_WORDS and rng.random() < 0.5:
            return rng.choice(PREFIX_FRAMES).format(_lower_first(sentence))
        return rng.choice(SUFFIX_FRAMES).format(sentence)
    return sentence + "."


@dataclass(frozen=True)
class ParaphraseResult:
    text: str
    method: str  # "llm" or "rules"
    backend: str
    model: str
    prompt_version: str
    error: str = ""  # Why the LLM's paraphrase was not used, when the rules stepped in.
    attempts: int = 0


def llm_paraphrase(
    backend: ChatBackend,
    keyfact: str,
    *,
    max_retries: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> ParaphraseResult:
    """Ask the LLM; an answer that merely repeats the key-fact counts as a parse error and is retried.

    Raises NotSupported for the offline backend; `paraphrase_keyfact` picks the rules for it instead.
    """
    if max_retries is None:
        max_retries = backend_config().llm_max_retries

    def parse(text: str) -> str:
        sentence = parse_paraphrase(text)
        if _same(sentence, keyfact):
            raise ParseError("The paraphrase repeats the key-fact word for word")
        return sentence

    outcome = complete_with_retries(
        backend,
        paraphrase_messages(keyfact),
        parse,
        policy=RetryPolicy(max_retries=max_retries, sleep=sleep),
        max_tokens=200,
        temperature=0.7,  # Some variety: checks built from one key-fact should not all read the same.
    )
    model = outcome.completion.model if outcome.completion else backend.model
    return ParaphraseResult(
        text=outcome.value or "",
        method="llm",
        backend=backend.name,
        model=model,
        prompt_version=PARAPHRASE_VERSION,
        error=outcome.error,
        attempts=outcome.attempts,
    )


def paraphrase_keyfact(backend: ChatBackend | None, keyfact: str, *, seed: int = 0, **kwargs) -> ParaphraseResult:
    """The LLM's paraphrase when there is an LLM and it succeeds, else the rule-based one."""
    error = ""
    if backend is not None and not isinstance(backend, SentenceLabeler):
        result = llm_paraphrase(backend, keyfact, **kwargs)
        if result.text:
            return result
        error = result.error
    return ParaphraseResult(
        text=rule_paraphrase(keyfact, seed=seed),
        method="rules",
        backend="rules",
        model="",
        prompt_version=RULES_VERSION,
        error=error,
    )
