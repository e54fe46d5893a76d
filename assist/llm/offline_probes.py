"""Counterfactual probes: would the summary sentence fit the document better with one detail changed?

A sentence that gives an action to the wrong person of the document ("Dr Brenner said coverage fell to 84%" where
Dr Osei said it) reads, to a sentence-embedding model, a little closer to the document once the right person is put
in: "Dr Osei said coverage fell to 84%" matches the source sentence better than the sentence itself does. The same
holds for a word turned into its opposite ("the strike ended" where it continued). A faithful sentence loses
similarity with any such change. The probes make those variants, embed them with the labeler's model, and report the
largest rise of the best cosine to the document, per kind:

- name: each name of the sentence replaced by each other name of the NAME_SOURCES document sentences most
  similar to it (and each speaker label): the passage a swapped name comes from is the one the sentence retells;
- opposite: each word with an opposite (rose/fell, approved/rejected, before/after) replaced by it.

This compares the sentence with itself, so paraphrase does not count against it, unlike a fixed similarity
threshold. The rise is small (a few hundredths) and noisy for any one variant; the thresholds that turn it into a
finding were chosen on the tuning sets (benchmarks/offline_judge.py).
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .offline_checks import OPPOSITE, fold

NAME, OPPOSITE_WORD = "name", "opposite"
MAX_VARIANTS = 48  # Per name or sentence: bounded in time whatever the document.
NAME_SOURCES = 3  # The names tried come from this many source sentences most similar to the summary sentence.

_NAME_WORD = r"[A-Z][\w-]*(?:['’][A-Z][\w-]*)?"
# What may stand between two words of one name: a space, or a particle ("Ana de Souza", "Bank of Ostra").
NAME_JOIN = r"\s+(?:(?:of|de|van|von|la|le|du|del|da)\s+)?"
# A run of capitalised words, with "of", "de", "van" ... inside: a name as a summary writes it.
_NAME = re.compile(rf"\b{_NAME_WORD}(?:{NAME_JOIN}{_NAME_WORD})*")
# Capitalised words that open a name run without being part of the name.
_NOT_PART = {"the", "a", "an", "in", "on", "at", "after", "before", "during", "when", "while", "according", "by",
             "for", "from", "with", "this", "that", "these", "those", "it", "he", "she", "they", "we", "i", "its",
             "his", "her", "their", "our", "both", "all", "some", "most", "as", "since", "although", "but", "and",
             "mr", "mrs", "ms", "dr", "prof", "sir", "dame", "meanwhile", "however", "last", "next", "each", "every",
             "also", "yes", "no", "okay", "ok", "so", "well", "thanks", "thank", "hello", "hi", "sure", "right",
             "if", "once", "because", "despite", "without", "under", "over", "about", "around", "only"}
_CALENDAR = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
             "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}


def names(text: str) -> list[str]:
    """The names of a sentence, in order, without repeats: capitalised runs less a leading article or title, less
    months and weekdays (their own checks judge dates), less a lone capitalised first word (an ordinary word)."""
    found = []
    for match in _NAME.finditer(text):
        words = match.group().split()
        while words and fold(words[0]) in _NOT_PART:
            words = words[1:]
        if not words or all(fold(word) in _CALENDAR for word in words):
            continue
        if match.start() == 0 and len(match.group().split()) == 1:
            continue
        found.append(" ".join(words))
    return list(dict.fromkeys(found))


def _same(left: str, right: str) -> bool:
    """One name inside the other ("Brandt", "Helena Brandt") is the same person."""
    left, right = fold(left), fold(right)
    return left in right or right in left


@dataclass(frozen=True)
class Variant:
    kind: str
    text: str  # The sentence with one thing changed.
    replaced: str  # What it says there.
    replacement: str  # What the variant says instead.


def variants(sentence: str, document_names: Sequence[str], kind: str) -> list[Variant]:
    """The sentence with one name (kind NAME) or one opposite word (OPPOSITE_WORD) changed."""
    if kind == OPPOSITE_WORD:
        flips = []
        for match in re.finditer(r"[A-Za-z]+", sentence):
            for opposite in sorted(OPPOSITE.get(match.group().lower(), ())):
                flips.append(Variant(OPPOSITE_WORD, sentence[:match.start()] + opposite + sentence[match.end():],
                                     match.group(), opposite))
        return flips[:MAX_VARIANTS]
    made: list[Variant] = []
    own = names(sentence)
    others = [name for name in dict.fromkeys(document_names) if not any(_same(name, mine) for mine in own)]
    for mine in own:
        at = sentence.find(mine)
        made += [Variant(NAME, sentence[:at] + other + sentence[at + len(mine):], mine, other)
                 for other in others][:MAX_VARIANTS]
    return made


@dataclass(frozen=True)
class Probe:
    variant: Variant  # The changed sentence that fits the document best.
    gain: float  # How much higher its best cosine to the document is than the sentence's own.
    source_index: int  # The document sentence it fits best.


def probe(sentence_vector: np.ndarray, source_vectors: np.ndarray, found: Sequence[Variant],
          vectors: np.ndarray) -> dict[str, Probe]:
    """The best variant of each kind, by its rise of the best cosine to the document (negative: every variant of
    that kind fits worse than the sentence itself). `vectors`: the variants' embeddings, in order."""
    if not found:
        return {}
    sources = source_vectors / np.linalg.norm(source_vectors, axis=1, keepdims=True)
    base = float(np.max(sources @ (sentence_vector / np.linalg.norm(sentence_vector))))
    similarities = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)) @ sources.T
    best: dict[str, Probe] = {}
    for variant, row in zip(found, similarities):
        index = int(np.argmax(row))
        gain = float(row[index]) - base
        if variant.kind not in best or gain > best[variant.kind].gain:
            best[variant.kind] = Probe(variant, gain, index)
    return best
