"""Who did what to whom: whether two names (or two numbers) of a summary sentence stand in the same roles around a
word as they do in the document, and the names the document uses.

A reversed pairing ("Castleford beat Rovers" where Rovers beat Castleford) names only what the document names, so a
check that a name occurs passes it; UniSumEval counts it as a relation error (paper appendix C, table 11). The rule:
two names around a word ("A beat B", "A was sent off for a foul on B") stand in the opposite order in every document
sentence that has both names and the word, with the same voice (a "by" after the word turns it).

Words are compared by a crude stem (a common ending cut, then a shared prefix of at least four letters) so that
"beaten" finds "beat"; irregular forms ("led", "lead") are simply not matched, which can only make the rule stay
silent. A word given to the wrong person of the document is the counterfactual probes' job (offline_probes). Pure
functions of the text, like the checks they extend.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .offline_checks import (
    _NOT_NAMES,
    _SCALES,
    _TOKEN,
    _UNITS,
    MONTHS,
    NAME,
    NUMBER,
    WEEKDAYS,
    Analysis,
    Item,
    Source,
    analyse,
    fold,
)
from .offline_probes import names

# Words that say nothing about who did what: reporting and light verbs, auxiliaries and fillers.
_PLAIN = set("""
said says say saying told tells added adding according also would will could should shall can may might must
just very really well yes okay ok thank thanks please new year years time times per cent percent part
make makes made take takes took taken get gets got give gives gave put puts going want wants like
come comes came coming go goes went gone
""".split())
# Two names further apart than this (in words), or with a comma between them, are rarely the two ends of one verb:
# "Savings at the Leeds factory, according to Rao".
CLAUSE = 12
_PRONOUNS = {"he", "she", "they", "it", "his", "her", "their", "its", "him", "them", "this", "these", "those"}
_PASSIVE_MARK = "by"


def stem(word: str) -> str:
    """"collected" -> "collect", "closures" -> "closur", "studied" -> "study": a common ending cut, at most six
    letters kept."""
    if word.endswith(("ied", "ies")) and len(word) > 4:
        return (word[:-3] + "y")[:6]
    for ending in ("ing", "ed", "es", "s", "ly"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[:-len(ending)]
            break
    return word[:6]


def same_stem(left: str, right: str) -> bool:
    if left == right:
        return True
    shorter, longer = sorted((left, right), key=len)
    return len(shorter) >= 4 and longer.startswith(shorter)


@dataclass(frozen=True)
class Anchor:
    """A name (adjacent capitalised words joined: "Samuel Reyes") or a number, at token positions first..last."""

    kind: str
    text: str
    values: frozenset
    first: int
    last: int

    def matches(self, other: "Anchor") -> bool:
        return self.kind == other.kind and bool(self.values & other.values)


@dataclass
class Frame:
    """One sentence: its names and numbers, its content words, and where its clauses break."""

    anchors: list[Anchor]
    words: list[tuple[int, str, str]]  # (token position, word as written, stem) of each content word.
    units: set[int] = field(default_factory=set)  # Positions of words a number counts ("41 votes").
    breaks: set[int] = field(default_factory=set)  # Positions of words after a comma, colon, semicolon or bracket.

    @property
    def stems(self) -> set[str]:
        return {word_stem for _, _, word_stem in self.words}

    def passive_after(self, position: int) -> bool:
        """A "by" within three tokens after the word: "was beaten 3-1 by Rovers"."""
        return _PASSIVE_MARK in self._folded[position + 1:position + 4]

    _folded: list[str] = field(default_factory=list)


def frame(text: str, items: Sequence[Item]) -> Frame:
    """The sentence's frame from its checked items (names already filtered as the document's checks filter them)."""
    tokens = list(_TOKEN.finditer(text))
    starts = {match.start(): index for index, match in enumerate(tokens)}
    anchors: list[Anchor] = []
    for item in items:
        if item.kind not in (NAME, NUMBER) or item.span == (0, 0) and item.kind == NAME:
            continue
        position = starts.get(item.span[0])
        if position is None:
            continue
        last = position
        if item.kind == NUMBER:
            while last + 1 < len(tokens) and tokens[last + 1].start() < item.span[1]:
                last += 1
        previous = anchors[-1] if anchors else None
        if item.kind == NAME and previous and previous.kind == NAME and position - previous.last <= 1 + (
                fold(tokens[position - 1].group(0)) == "&"):
            anchors[-1] = Anchor(NAME, f"{previous.text} {item.text}", previous.values | item.values,
                                 previous.first, position)
            continue
        anchors.append(Anchor(item.kind, item.phrase or item.text if item.kind == NUMBER else item.text,
                              item.values, position, last))
    # A number's unit ("41 votes") stays a content word: it tells what the sentence is about as much as any other.
    taken = {position for anchor in anchors if anchor.kind == NAME for position in range(anchor.first, anchor.last + 1)}
    units = {position for anchor in anchors if anchor.kind == NUMBER for position in range(anchor.first + 1,
                                                                                          anchor.last + 1)}
    folded = [fold(match.group(0)) for match in tokens]
    words = []
    for position, match in enumerate(tokens):
        if position in taken or not match.group("word"):
            continue
        for part in folded[position].split("-"):
            if len(part) < 3 or part in _NOT_NAMES or part in _PLAIN or part in _UNITS or part in _SCALES \
                    or part in MONTHS or part in WEEKDAYS or part in _PRONOUNS:
                continue
            words.append((position, match.group(0), stem(part)))
    breaks = {position for position in range(1, len(tokens))
              if re.search(r"[,;:()]", text[tokens[position - 1].end():tokens[position].start()])}
    result = Frame(anchors=anchors, words=words, units=units, breaks=breaks, _folded=folded)
    return result


@dataclass(frozen=True)
class Reversal:
    first: str
    word: str
    second: str
    source_index: int


class Document(Source):
    """A Source that also knows each sentence's pairings and the names it uses (speaker labels included)."""

    def __init__(self, sentences: Sequence[str], speakers: Sequence[str] = ()):
        super().__init__(sentences, speakers)
        self.frames = [frame(text, self.checked_items(analysis)) for text, analysis in
                       zip(self.sentences, self.analyses)]
        self.sentence_names = [names(text) for text in self.sentences]
        self.speakers = list(dict.fromkeys(speaker for speaker in speakers if speaker))
        self.names = list(dict.fromkeys([name for found in self.sentence_names for name in found] + self.speakers))

    def names_near(self, indices: Sequence[int]) -> list[str]:
        """The names of the sentences at `indices`, then the speakers: who a sentence close to these may be about."""
        return list(dict.fromkeys([name for i in indices for name in self.sentence_names[i]] + self.speakers))

    def summary_frame(self, sentence: str, analysis: Analysis | None = None) -> Frame:
        """The summary sentence's frame. The words its numbers count are left out: the number checks judge them
        (a count paired with a unit the document never gives it), and a unit is rarely a claim about who did what."""
        analysis = analysis or analyse(sentence)
        found = frame(sentence, self.checked_items(analysis))
        found.words = [word for word in found.words if word[0] not in found.units]
        return found

    def reversals(self, summary: Frame) -> list[Reversal]:
        found = []
        for kind in (NAME, NUMBER):
            found += self._reversals([anchor for anchor in summary.anchors if anchor.kind == kind], summary)
        return found

    def _reversals(self, anchors: list[Anchor], summary: Frame) -> list[Reversal]:
        found = []
        for a_index, first in enumerate(anchors):
            for second in anchors[a_index + 1:]:
                if first.matches(second):
                    continue
                if second.first - first.last > CLAUSE or any(
                        first.last < position <= second.first for position in summary.breaks):
                    continue
                between = [(p, w, s) for p, w, s in summary.words if first.last < p < second.first]
                for position, written, word_stem in between:
                    verdicts = self._orders(first, second, word_stem, summary.passive_after(position))
                    if verdicts and not any(verdicts.values()):
                        found.append(Reversal(first.text, written, second.text, min(verdicts)))
                        break
        return found

    def _orders(self, first: Anchor, second: Anchor, word_stem: str, passive: bool) -> dict[int, bool]:
        """For each document sentence with both names around the word: whether it keeps the summary's order."""
        verdicts = {}
        for i, f in enumerate(self.frames):
            ones = [b for b in f.anchors if b.matches(first) and not b.matches(second)]
            twos = [b for b in f.anchors if b.matches(second) and not b.matches(first)]
            if not ones or not twos:
                continue
            for position, _, other_stem in f.words:
                if not same_stem(word_stem, other_stem):
                    continue
                one, two = ones[0], twos[0]
                if not (min(one.last, two.last) < position < max(one.first, two.first)):
                    continue
                same_order = one.first < two.first
                verdicts[i] = same_order == (passive == f.passive_after(position))
        return verdicts
