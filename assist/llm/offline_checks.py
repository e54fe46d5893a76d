"""What the offline labeler can check without a language model: the numbers, dates, times and names of a summary
sentence, and a few opposite words, against the source sentences closest to it.

UniSumEval's intrinsic errors (paper appendix C, table 11) are mostly wrong details inside an on-topic sentence: an
entity error names a wrong person, place, number or date; a relation error uses a wrong verb, preposition or
adjective. Sentence similarity cannot see them (a copied sentence with one changed number still scores high), but a
detail that the document never states can be found by plain matching:

- numbers in digits or words, with their scale ("£3.2 million" = "3,200,000"; "forty thousand" = "40,000"), ordinals
  in digits ("4th"), percentages, years; a number after "about", "around", "nearly", ... may be rounded (10%);
- times ("7 pm", "8:30", "seven o'clock") and the names of months and weekdays;
- a number whose unit ("22 spaces") the document never pairs with it, where the closest source sentences count the
  same unit with another number ("140 spaces"): a figure moved from elsewhere;
- names: capitalised words inside a sentence (a sentence's first word only when the document writes it capitalised
  inside a sentence too), matched without case, accents or a possessive, and allowing an inflected ending
  ("Estonian" for "Estonia"); redaction placeholders (`<PLACE_1>`) exactly;
- opposite words (rise/fall, before/after, more/fewer, opened/closed, ...) where the closest source sentence has
  one word of a pair and the summary sentence only the other;
- a negation ("not", "never", "no") in a sentence whose closest source sentences have none.

Everything here is a pure function of its text arguments, so a sentence gets the same findings wherever it is judged.
"""

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

NUMBER = "number"
TIME = "time"
DATE = "date"
NAME = "name"
PLACEHOLDER = "placeholder"

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "dozen": 12,
}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000,
           "trillion": 1_000_000_000_000, "k": 1_000, "m": 1_000_000, "mn": 1_000_000, "bn": 1_000_000_000}
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9,
    "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14, "fifteenth": 15,
    "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19, "twentieth": 20, "thirtieth": 30,
}
# "one" is left out: "one of the", "one day" are rarely a claim about a count, and would be flagged as unsupported.
_NUMBER_WORDS = set(_UNITS) - {"one"}
# Words that say a number is rounded; bounds ("over", "up to") are not roundings and must match exactly.
_HEDGES = {"about", "around", "roughly", "nearly", "almost", "approximately", "some", "circa", "estimated"}
MONTHS = {
    "january": "January", "jan": "January", "february": "February", "feb": "February", "march": "March",
    "mar": "March", "april": "April", "apr": "April", "may": "May", "june": "June", "jun": "June", "july": "July",
    "jul": "July", "august": "August", "aug": "August", "september": "September", "sept": "September",
    "sep": "September", "october": "October", "oct": "October", "november": "November", "nov": "November",
    "december": "December", "dec": "December",
}
WEEKDAYS = {day.lower(): day for day in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
                                         "Sunday")}
# Capitalised words that are not names: titles, pronouns, and the words that open most sentences.
_NOT_NAMES = set("""
a about above according across after again against all also although always among an and another any are as at
be because been before being below between both but by can could did do does during each either even every few
for from had has have he her here hers him his how however i if in into is it its just last later like many may
me meanwhile might more most much must my neither never next no nor not now of often on once one only or other
our out over per perhaps several she should since so some still such than that the their them then there these
they this those though through thus to too under unless until up upon us was we were what when where whether
which while who whom whose why will with within without would yes yet you your
dr mr mrs ms mx prof sir dame st mt lt col gen sgt rev hon
""".split())
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z_]*_\d+>")
_SPEAKER_TAG = re.compile(r"#\w+#")
# A token: a placeholder, a time, a number (digits with separators and decimals, an ordinal suffix), or a word.
_TOKEN = re.compile(
    r"<[A-Z][A-Z_]*_\d+>"
    r"|#\w+#"
    r"|(?P<time>\b\d{1,2}(?::|\.)\d{2}\s*(?:[ap]\.?m\.?\b)?|\b\d{1,2}\s*[ap]\.?m\.?\b|\b\d{1,2}(?=\s*o'clock))"
    r"|(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?P<ordinal>st|nd|rd|th)?"
    r"|(?P<word>[^\W\d_](?:[^\W_]|['’](?=[^\W\d_])|-(?=[^\W_]))*)"
)
_NEGATIONS = {"not", "never", "no", "none", "nobody", "nothing", "neither", "nor", "without", "cannot", "n't",
              "unable", "failed", "fails", "refused", "refuses"}
# Pairs of word groups with opposite meanings (relation errors: wrong verbs, prepositions, adjectives).
_OPPOSITES = [
    ({"rise", "rises", "rose", "risen", "rising", "increase", "increased", "increases", "increasing", "grow",
      "grows", "grew", "grown", "growing", "climb", "climbed", "climbs", "higher", "gain", "gained", "gains"},
     {"fall", "falls", "fell", "fallen", "falling", "decrease", "decreased", "decreases", "decreasing", "drop",
      "drops", "dropped", "decline", "declined", "declines", "shrink", "shrinks", "shrank", "lower", "cut", "cuts"}),
    ({"more", "most", "greater"}, {"fewer", "less", "least", "fewest"}),
    ({"before", "earlier", "prior"}, {"after", "later", "afterwards"}),
    ({"open", "opens", "opened", "reopen", "reopened", "reopens"}, {"close", "closes", "closed", "shut", "shuts"}),
    ({"win", "wins", "won", "winning", "victory"}, {"lose", "loses", "lost", "losing", "defeat", "defeated"}),
    ({"approve", "approves", "approved", "accept", "accepts", "accepted", "support", "supports", "supported",
      "allow", "allows", "allowed", "permit", "permitted"},
     {"reject", "rejects", "rejected", "refuse", "refuses", "refused", "oppose", "opposes", "opposed", "ban",
      "bans", "banned", "forbid", "forbids", "forbade", "prohibit", "prohibited"}),
    ({"above"}, {"below"}),
    ({"inside", "indoors"}, {"outside", "outdoors"}),
    ({"north", "northern"}, {"south", "southern"}),
    ({"east", "eastern"}, {"west", "western"}),
    ({"larger", "bigger", "largest", "biggest"}, {"smaller", "smallest"}),
    ({"longer", "longest"}, {"shorter", "shortest"}),
    ({"older", "oldest"}, {"younger", "youngest"}),
    ({"first"}, {"last"}),
    ({"buy", "buys", "bought"}, {"sell", "sells", "sold"}),
    ({"profit", "profits"}, {"loss", "losses"}),
    ({"positive"}, {"negative"}),
    ({"maximum"}, {"minimum"}),
    ({"weekday", "weekdays"}, {"weekend", "weekends"}),
]
OPPOSITE = {word: other for left, right in _OPPOSITES for words, other in ((left, right), (right, left))
            for word in words}
HEDGE_TOLERANCE = 0.10
DERIVE_ALL = 150  # Up to this many distinct numbers in a document, every pair of them may be combined.
DERIVE_NEAR = 2
_SHORT_UNITS = {"km", "kg", "mg", "ml", "cm", "mm", "mi", "lb", "oz", "ft", "hr", "yr", "gb", "mb", "kw"}


@dataclass(frozen=True)
class Item:
    """A checkable detail of a summary sentence: `text` as written there, `values` what must be found in support."""

    kind: str
    text: str
    values: frozenset = field(default_factory=frozenset)
    hedged: bool = False  # "about 30,000": a rounded value is support enough.
    opens_sentence: bool = False  # A capitalised word at the start of a sentence may be an ordinary word.
    unit: str = ""  # What a number counts, from the word after it: "22 rooms" -> "room"; "27%" -> "percent".
    phrase: str = ""  # The number with its unit as written: "22 rooms".
    span: tuple[int, int] = field(default=(0, 0), compare=False)  # Where the number (and its unit) is written.


@dataclass
class Analysis:
    """A sentence's tokens and details, computed once per sentence."""

    words: list[str]  # Lower-cased, accents and possessives removed: what names are matched against.
    numbers: set[float]
    quantities: set[tuple[float, str]]  # (number, unit) for numbers followed by what they count.
    times: set[tuple[int, int]]
    dates: set[str]
    placeholders: set[str]
    negated: bool
    capitalised_inside: set[str]  # Words written with a capital letter other than at the start of the sentence.
    items: list[Item]


def fold(word: str) -> str:
    """Lower case, no accents, no possessive: "Zürich's" -> "zurich"."""
    word = re.sub(r"['’]s?$", "", word)
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _number_value(text: str) -> float:
    return float(text.replace(",", ""))


def _time_value(text: str) -> tuple[int, int]:
    digits = re.findall(r"\d+", text)
    hour, minute = int(digits[0]), int(digits[1]) if len(digits) > 1 else 0
    return hour % 12, minute


def _is_sentence_start(tokens: list, position: int, text: str) -> bool:
    """The first word, or a word after an opening quote, a colon or a dash that starts a clause."""
    if position == 0:
        return True
    previous_end = tokens[position - 1].end()
    between = text[previous_end:tokens[position].start()]
    return bool(re.search(r"[\"“:;!?.(]|\s[-–—]\s", between))


def analyse(text: str) -> Analysis:
    tokens = list(_TOKEN.finditer(text))
    words, numbers, times, dates, placeholders, quantities = [], set(), set(), set(), set(), set()
    capitalised_inside = set()
    items: list[Item] = []
    negated = False
    position = 0
    while position < len(tokens):
        match = tokens[position]
        raw = match.group(0)
        previous = fold(tokens[position - 1].group(0)) if position else ""
        if _PLACEHOLDER.fullmatch(raw):
            placeholders.add(raw)
            items.append(Item(PLACEHOLDER, raw, frozenset({raw})))
        elif _SPEAKER_TAG.fullmatch(raw):
            pass  # "#Person1#": a dialogue's speaker tag, never in the utterances themselves.
        elif match.group("time"):
            value = _time_value(raw)
            times.add(value)
            items.append(Item(TIME, raw.strip(), frozenset({value})))
        elif match.group("number"):
            value, shown, position = _read_scale(tokens, position, _number_value(match.group("number")), raw, text)
            unit = _unit(tokens, position, text)
            numbers.add(value)
            quantities.add((value, unit))
            items.append(Item(NUMBER, shown, frozenset({value}), hedged=previous in _HEDGES, unit=unit,
                              phrase=_phrase(tokens, position, text, shown, unit),
                              span=(match.start(), _phrase_end(tokens, position, text, unit))))
        else:
            word = raw
            folded = fold(word)
            words.append(folded)
            if folded in ("n't",) or folded in _NEGATIONS or word.lower().endswith(("n't", "n’t")):
                negated = True
            ordinal = _written_ordinal(folded, tokens, position)
            if ordinal is not None:
                numbers.add(ordinal)
                items.append(Item(NUMBER, word, frozenset({ordinal}), span=(match.start(), match.end())))
                position += 1
                continue
            if folded.split("-")[0] in _NUMBER_WORDS and all(part in _UNITS for part in folded.split("-")):
                start = match.start()
                value, position = _read_written_number(tokens, position)
                shown = text[start:tokens[position].end()]
                unit = _unit(tokens, position, text)
                numbers.add(value)
                quantities.add((value, unit))
                items.append(Item(NUMBER, shown, frozenset({value}), hedged=previous in _HEDGES, unit=unit,
                                  phrase=_phrase(tokens, position, text, shown, unit),
                                  span=(start, _phrase_end(tokens, position, text, unit))))
                position += 1
                continue
            if folded in WEEKDAYS or (folded in MONTHS and _is_month(tokens, position, word)):
                name = WEEKDAYS.get(folded) or MONTHS[folded]
                dates.add(name)
                items.append(Item(DATE, word, frozenset({name})))
            elif word[0].isupper() and folded not in _NOT_NAMES and not (word.isupper() and len(word) == 1):
                starts = _is_sentence_start(tokens, position, text)
                if not starts:
                    capitalised_inside.add(folded)
                items.append(Item(NAME, re.sub(r"['’]s?$", "", word), frozenset({folded}), opens_sentence=starts,
                                  span=(match.start(), match.end())))
        position += 1
    items = _share_units(items, text)
    quantities = {(value, item.unit) for item in items if item.kind == NUMBER for value in item.values}
    return Analysis(words=words, numbers=numbers, quantities=quantities, times=times, dates=dates,
                    placeholders=placeholders, negated=negated, capitalised_inside=capitalised_inside, items=items)


def _read_scale(tokens, position, value, raw, text) -> tuple[float, str, int]:
    """Apply a following "million", "bn", "thousand" to a number in digits; keep the currency sign for display."""
    shown = raw
    start = tokens[position].start()
    if start and text[start - 1] in "£$€¥":
        shown = text[start - 1] + shown
    if position + 1 < len(tokens) and tokens[position + 1].group("word"):
        following = tokens[position + 1]
        scale = following.group(0).lower()
        gap = text[tokens[position].end():following.start()]
        if scale in _SCALES and gap in ("", " "):
            return value * _SCALES[scale], f"{shown}{gap}{following.group(0)}", position + 1
    return value, shown, position


def _unit(tokens, position, text) -> str:
    """The word a number counts ("140 spaces" -> "space", "84-metre" -> "metre"), "percent", or ""."""
    end = tokens[position].end()
    following = text[end:end + 9].lower()
    if following.startswith(("%", " %", " per cent", " percent", "-per-cent")):
        return "percent"
    if position + 1 >= len(tokens) or not tokens[position + 1].group("word"):
        return ""
    if text[end:tokens[position + 1].start()] not in (" ", "-"):
        return ""
    word = fold(tokens[position + 1].group(0))
    if word in _NOT_NAMES or word in _UNITS or word in MONTHS or word in _SCALES or (
            len(word) < 3 and word not in _SHORT_UNITS):
        return ""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _phrase(tokens, position, text, shown, unit) -> str:
    if not unit:
        return shown
    if unit == "percent":
        return f"{shown}%"
    following = tokens[position + 1]
    return shown + text[tokens[position].end():following.end()]


def _phrase_end(tokens, position, text, unit) -> int:
    end = tokens[position].end()
    if unit == "percent":
        # The same spellings `_unit` reads as a percentage.
        return end + len(re.match(r"\s*(?:%|per cent|percent)|-per-cent", text[end:]).group(0))
    return tokens[position + 1].end() if unit else end


_RANGE = re.compile(r"\s*(?:to|and|or|-|–|—)\s*(?:about|around|roughly|nearly|almost|approximately|some)?\s*$")


def _share_units(items: list[Item], text: str) -> list[Item]:
    """A range names its unit once: "from 35 to about 12 minutes", "35 minutes to about 12", "5-10 km"."""
    items = list(items)
    for left in range(len(items) - 1):
        first, second = items[left], items[left + 1]
        if first.kind != NUMBER or second.kind != NUMBER or bool(first.unit) == bool(second.unit):
            continue
        if not _RANGE.match(text[first.span[1]:second.span[0]]):
            continue
        unit = first.unit or second.unit
        items[left], items[left + 1] = (replace(item, unit=unit, phrase=item.phrase if item.unit else
                                                f"{item.text} ({unit})") for item in (first, second))
    return items


def _read_written_number(tokens, position) -> tuple[float, int]:
    """"forty thousand", "twenty-five", "two hundred and ten": the value and the position of its last token."""
    total, current, words = 0, 0, []
    last = position
    index = position
    while index < len(tokens):
        word = tokens[index].group("word")
        if not word:
            break
        parts = fold(word).split("-")
        if all(part in _UNITS or part in _SCALES and len(part) > 2 for part in parts):
            for part in parts:
                if part in _UNITS:
                    current += _UNITS[part]
                elif part == "hundred":
                    current = max(current, 1) * 100
                else:
                    total += max(current, 1) * _SCALES[part]
                    current = 0
            words.append(word)
            last = index
        elif fold(word) == "and" and words and index + 1 < len(tokens) and tokens[index + 1].group("word") and \
                fold(tokens[index + 1].group("word")).split("-")[0] in _UNITS:
            pass
        else:
            break
        index += 1
    return float(total + current), last


def _written_ordinal(folded: str, tokens, position) -> float | None:
    """"twenty-first", "fourteenth" as 21, 14; "first" to "tenth" only next to a month ("the fifth of May"), as
    elsewhere they are ordinary words ("for the first time")."""
    *tens, last = folded.split("-")
    if last not in _ORDINALS or len(tens) > 1 or (tens and tens[0] not in _UNITS):
        return None
    value = _ORDINALS[last] + (_UNITS[tens[0]] if tens else 0)
    if value > 10:
        return float(value)
    near = [fold(tokens[i].group(0)) for i in (position - 1, position + 1, position + 2) if 0 <= i < len(tokens)]
    return float(value) if any(word in MONTHS and len(word) > 3 for word in near) else None


def _is_month(tokens, position, word) -> bool:
    """"May", "March" are months only with a day or a year next to them, or after "in", "until", ... ."""
    if fold(word) not in ("may", "march"):
        return word[0].isupper() or len(word) > 3
    if not word[0].isupper():
        return False
    near = [tokens[i] for i in (position - 1, position + 1) if 0 <= i < len(tokens)]
    if any(token.group("number") for token in near):
        return True
    return position > 0 and fold(tokens[position - 1].group(0)) in {"in", "of", "until", "since", "by", "from",
                                                                     "early", "late", "mid", "end", "last", "next"}


# --- Support: what a set of source sentences states.


class Source:
    """A document's sentences, analysed once; `support(items, indices)` says which items those sentences lack."""

    def __init__(self, sentences: Sequence[str], speakers: Sequence[str] = ()):
        """`speakers`: who says each sentence, for a dialogue ("" where no one is named); empty for prose."""
        self.sentences = list(sentences)
        self.analyses = [analyse(sentence) for sentence in self.sentences]
        if speakers and len(speakers) != len(self.sentences):
            raise ValueError(f"{len(speakers)} speakers for {len(self.sentences)} sentences: give one per sentence")
        # A dialogue's speaker labels ("Industrial Designer: ...") are stored apart from the utterances; a summary
        # names the speakers, so their words support names like the document's own words do, and a speaker's name
        # is stated in each of their own turns ("Castell said his blood pressure was high" retells "my blood
        # pressure was high", said by Ahmed Castell).
        self.spoken_by = [{fold(word) for word in re.findall(r"[^\W\d_]+", speaker)} for speaker in speakers]
        self.speaker_words = set().union(*self.spoken_by)
        self.capitalised_anywhere = set().union(self.speaker_words, *(a.capitalised_inside for a in self.analyses))

    @cached_property
    def derived_numbers(self) -> frozenset[float]:
        """Numbers a reader computes from two of the document's: a sum, a difference, a product, a ratio or a whole
        percentage ("93 did not finish" from "175 started" and "82 finished"; "twice as many"), to 6 places. A long
        document with more than DERIVE_ALL numbers pairs each number only with those of its sentence and the next
        DERIVE_NEAR sentences, so the set grows with the document rather than with its square."""
        numbers = set().union(*(analysis.numbers for analysis in self.analyses))
        if len(numbers) <= DERIVE_ALL:
            groups = [sorted(numbers)]
        else:
            groups = [sorted(set().union(*(a.numbers for a in self.analyses[start:start + DERIVE_NEAR + 1])))
                      for start in range(len(self.analyses))]
        derived = set()
        for group in groups:
            for index, first in enumerate(group):
                for second in group[index:]:
                    derived |= {first + second, abs(second - first), first * second}
                    if first and second:  # Also as a whole percentage: "42 percent" of 412 is 173.
                        derived |= {second / first, first / second, round(100 * first / second),
                                    round(100 * second / first)}
        return frozenset(round(value, 6) for value in derived) | frozenset(numbers)

    def checked_items(self, analysis: Analysis) -> list[Item]:
        """The summary sentence's items, leaving out a sentence-initial capitalised word that the document never
        writes capitalised inside a sentence: it is more likely an ordinary word than a name."""
        return [item for item in analysis.items
                if not item.opens_sentence or item.values <= self.capitalised_anywhere]

    def conflict(self, item: Item, indices: Sequence[int]) -> tuple[int, str] | None:
        """(source index, its number with the unit) where the sentences at `indices` count the same thing with
        another number ("22 spaces" where they say "140 spaces"), provided the document nowhere gives this number
        with that unit. None otherwise, and always for what is not a number with a unit: a weekday, a month or a
        time found anywhere in the document passes, as summary sentences fuse sentences far apart."""
        if item.kind != NUMBER or not item.unit:
            return None
        for sentence, analysis in zip(self.sentences, self.analyses):
            # The same unit, or the number with its unit after "of" ("12 of the farms").
            if any(other.kind == NUMBER and self._in(item, _only(other)) and (other.unit == item.unit or (
                    not other.unit and re.match(rf"\s+of\s+(?:the\s+|these\s+|its\s+|their\s+)?{re.escape(item.unit)}",
                                                sentence[other.span[1]:])))
                   for other in analysis.items):
                return None
        for i in indices:
            for other in self.analyses[i].items:
                if other.kind == NUMBER and other.unit == item.unit and other.values != item.values:
                    return i, other.phrase
        return None

    def where(self, item: Item) -> list[int]:
        """The sentences that state the item; a speaker's name is stated in each of their turns."""
        spoken = [i for i, words in enumerate(self.spoken_by)
                  if item.kind == NAME and any(_same_name(value, word) for value in item.values for word in words)]
        return sorted({*spoken, *(i for i, analysis in enumerate(self.analyses) if self._in(item, analysis))})

    def anywhere(self, item: Item) -> bool:
        """Stated somewhere in the document, speaker labels included."""
        if item.kind == NAME and any(_same_name(value, word) for value in item.values for word in self.speaker_words):
            return True
        return bool(self.where(item))

    @staticmethod
    def _in(item: Item, analysis: Analysis) -> bool:
        (value,) = item.values
        if item.kind == NUMBER:
            if value in analysis.numbers or (value < 24 and value == int(value) and (int(value) % 12, 0)
                                             in analysis.times):
                return True
            return item.hedged and any(abs(value - other) <= HEDGE_TOLERANCE * max(abs(other), 1e-9)
                                       for other in analysis.numbers)
        if item.kind == TIME:
            hour, minute = value
            return value in analysis.times or (minute == 0 and any(
                number in (hour, hour + 12) for number in analysis.numbers))
        if item.kind == DATE:
            return value in analysis.dates
        if item.kind == PLACEHOLDER:
            return value in analysis.placeholders
        return any(_same_name(value, word) for word in analysis.words)


def _only(number: Item) -> Analysis:
    """An analysis holding just one number, to match a number against another with the hedging rule."""
    (value,) = number.values
    return Analysis(words=[], numbers={value}, quantities=set(), times=set(), dates=set(), placeholders=set(),
                    negated=False, capitalised_inside=set(), items=[number])


def _same_name(name: str, word: str) -> bool:
    """Equal, or one an inflection of the other ("estonia"/"estonian", "kettering"/"ketterings")."""
    if name == word:
        return True
    shorter, longer = sorted((name, word), key=len)
    return len(shorter) >= 5 and longer.startswith(shorter) and len(longer) - len(shorter) <= 2


def opposites(summary: Analysis, source: Analysis) -> list[tuple[str, str]]:
    """(summary word, source word) pairs of opposite meaning, where the source does not also use the summary's word."""
    found = []
    source_words = set(source.words)
    for word in dict.fromkeys(summary.words):
        other = OPPOSITE.get(word)
        if other is None:
            continue
        group = next(left | right for left, right in _OPPOSITES if word in left | right)
        same_side = group - other
        # A source that uses the summary's word, or a summary that uses both sides ("close ... open for longer",
        # "rising costs ... lower its goal"), is not a reversal of one word.
        if source_words & same_side or set(summary.words) & other:
            continue
        opposite = [w for w in source.words if w in other]
        if opposite:
            found.append((word, opposite[0]))
    return found
