"""Who did what: whether the document pairs a summary sentence's names and numbers with the words the sentence pairs
them with, and whether the sentence's content words occur in the document at all.

A name or number that occurs somewhere in the document is not yet a supported detail: a swap within the document
("Reyes led the study" where Brandt led it and Reyes collected the samples; "from 48 farms" where 48 counts the
farms sampled and 12 those in the follow-up) names only things the document names. UniSumEval counts these as
entity errors, and a reversed pairing ("Castleford beat Rovers") as a relation error (paper appendix C, table 11).
The document shows a pairing by proximity: a word belongs to the nearest name (and to the nearest number) of its
sentence. Three rules follow:

- misattribution: a word that the summary sentence pairs with a name or number never shares a sentence with it in
  the document (nor the next sentence, when that one opens with a pronoun), while the document pairs that word with
  another name or number that the summary sentence does not mention;
- reversal: two names around a word ("A beat B", "A was sent off for a foul on B") stand in the opposite order in
  every document sentence that has both names and the word, with the same voice (a "by" after the word turns it);
- unsupported content: words of the sentence that occur nowhere in the document; the judge decides how many make an
  out-of-article claim.

Words are compared by a crude stem (a common ending cut, then a shared prefix of at least four letters) so that
"proposed" finds "proposal"; irregular forms ("led", "lead") are simply not matched, which can only make a rule stay
silent. Pure functions of the text, like the checks they extend.
"""

import re
from collections.abc import Iterable, Sequence
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

# How far (in words) a word may stand from the name or number it is paired with.
REACH = 4
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
_TITLES = {"dr", "mr", "mrs", "ms", "mx", "prof", "professor", "sir", "dame", "lord", "lady", "councillor", "judge",
           "president", "minister", "senator", "governor", "mayor", "captain", "coach", "manager", "chairman",
           "chairwoman", "chair", "director", "commissioner", "chief", "executive", "leader", "substitute"}


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


def has_stem(word: str, stems: Iterable[str]) -> bool:
    return any(same_stem(word, other) for other in stems)


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

    def distance(self, position: int) -> int:
        if self.first <= position <= self.last:
            return 0
        return self.first - position if position < self.first else position - self.last


@dataclass
class Frame:
    """One sentence: its names and numbers, its content words, and which word is paired with which anchor."""

    anchors: list[Anchor]
    words: list[tuple[int, str, str]]  # (token position, word as written, stem) of each content word.
    units: set[int] = field(default_factory=set)  # Positions of words a number counts ("41 votes").
    breaks: set[int] = field(default_factory=set)  # Positions of words after a comma, colon, semicolon or bracket.
    paired: dict[int, set[str]] = field(default_factory=dict)  # Anchor index -> stems paired with it.
    opens_with_pronoun: bool = False

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
    result = Frame(anchors=anchors, words=words, units=units, breaks=breaks,
                   opens_with_pronoun=bool(folded) and folded[0] in _PRONOUNS, _folded=folded)
    for kind in (NAME, NUMBER):
        candidates = [index for index, anchor in enumerate(anchors) if anchor.kind == kind]
        if not candidates:
            continue
        for position, _, word_stem in words:
            distances = {index: anchors[index].distance(position) for index in candidates}
            nearest = min(distances.values())
            if nearest > REACH:
                continue
            for index, distance in distances.items():
                if distance == nearest:
                    result.paired.setdefault(index, set()).add(word_stem)
    return result


@dataclass(frozen=True)
class Reversal:
    first: str
    word: str
    second: str
    source_index: int


class Document(Source):
    """A Source that also knows each sentence's pairings and the names it uses (speaker labels included)."""

    def __init__(self, sentences: Sequence[str], speakers: Iterable[str] = ()):
        speakers = list(speakers)
        super().__init__(sentences, speakers)
        self.frames = [frame(text, self.checked_items(analysis)) for text, analysis in
                       zip(self.sentences, self.analyses)]
        self.names = list(dict.fromkeys([name for text in self.sentences for name in names(text)] + speakers))

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
