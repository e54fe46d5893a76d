"""Made examples for the offline verifier's training: faithful sentences that keep the document's wording, and errors
in sentences that do not.

The hand-written sets teach a habit of their writers: faithful sentences are mostly reworded, errors mostly close
copies of a document sentence with one detail changed. A model trained on them alone learns "close to the document
means wrong" (a faithful near-copy scored 0.98). Two kinds of made examples break that link, in the manner of
rule-made training data for factual-consistency classifiers (Kryscinski et al., 2020, "Evaluating the Factual
Consistency of Abstractive Text Summarization"):

- faithful near-copies: a document sentence with a trailing clause or an opening phrase cut, or a full name shortened
  to its last word;
- errors in reworded sentences: a faithful summary sentence of the sets (and a document sentence) with one detail
  changed: a name swapped for another of the document's, a number for another of the document's, a word for its
  opposite, two names exchanged with each other.

Each function returns None (or nothing) where the sentence offers nothing to change, so the made examples are only
as many as the sentences allow.
"""

import random
import re
from collections.abc import Sequence

from assist.llm.offline_checks import OPPOSITE
from assist.llm.offline_probes import names

MIN_WORDS = 6  # A shortened sentence keeps at least this many words, so that it still says something.
_NUMBER = re.compile(r"(?<![\w.,-])\d+(?:,\d{3})*(?:\.\d+)?(?![\w-]|,\d)")
_YEAR = re.compile(r"(?:19|20)\d\d")
# Where a sentence can be cut and its first part still stands alone.
# (Not at "and": it joins the items of lists as often as clauses.)
_CUT = re.compile(r",\s+(?:but|while|after|because|although|which|whereas|following)\s+|"
                  r"\s+(?:but|while|because|although|whereas)\s+")
# An opening phrase that can go: "In March 2024, ...", "According to the report, ...".
_OPENING = re.compile(r"^(?:In|On|At|By|After|Before|During|According to|Since|Last|Earlier|Later)\b[^,]{2,60},\s+")


def numbers(text: str) -> list[str]:
    return list(dict.fromkeys(match.group() for match in _NUMBER.finditer(text)))


def near_copies(sentence: str, document: str) -> list[str]:
    """Faithful shortenings of a document sentence: its first clause, the sentence without its opening phrase, its
    full names cut to their last word where the document itself names them so."""
    made = []
    for match in _CUT.finditer(sentence):
        head = sentence[:match.start()].rstrip(" ,;:")
        if len(head.split()) >= MIN_WORDS and head.count("(") == head.count(")") and head.count('"') % 2 == 0:
            made.append(head + ".")
            break
    opening = _OPENING.match(sentence)
    if opening and len(sentence[opening.end():].split()) >= MIN_WORDS:
        rest = sentence[opening.end():]
        made.append(rest[0].upper() + rest[1:])
    short = sentence
    for name in names(sentence):
        words = name.split()
        if len(words) == 2 and _alone(words[-1], document):
            short = short.replace(name, words[-1], 1)
    if short != sentence:
        made.append(short)
    return [text for text in made if text != sentence]


def _alone(word: str, document: str) -> bool:
    """Whether the document uses the word as a name on its own, not inside a longer capitalised run."""
    for match in re.finditer(rf"\b{re.escape(word)}\b", document):
        before = document[:match.start()].split()
        after = document[match.end():].split()
        if (not before or not before[-1][:1].isupper() or before[-1][-1] in ".:") and \
                (not after or not after[0][:1].isupper()):
            return True
    return False


def document_names(source: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(name for sentence in source for name in names(sentence)))


def planted(sentence: str, document: str, rng: random.Random) -> str | None:
    """The sentence with one detail wrong, the kind drawn at random among those the sentence allows."""
    makers = [_swap_name, _swap_number, _opposite, _exchange_names]
    rng.shuffle(makers)
    for make in makers:
        made = make(sentence, document, rng)
        if made and made != sentence:
            return made
    return None


def _swap_name(sentence: str, document: str, rng: random.Random) -> str | None:
    own = names(sentence)
    if not own:
        return None
    mine = rng.choice(own)
    # Another name of the document, not one the sentence already names (nor a part of one).
    others = [name for name in document_names(document.split("\n")) if name not in mine and mine not in name
              and not any(name in present or present in name for present in own)]
    if not others:
        return None
    same_length = [name for name in others if len(name.split()) == len(mine.split())]
    return sentence.replace(mine, rng.choice(same_length or others), 1)


def _swap_number(sentence: str, document: str, rng: random.Random) -> str | None:
    own = numbers(sentence)
    if not own:
        return None
    mine = rng.choice(own)
    year = bool(_YEAR.fullmatch(mine))
    others = [number for number in numbers(document)
              if number not in own and bool(_YEAR.fullmatch(number)) == year]
    if others:
        other = rng.choice(others)
    elif year:
        other = str(int(mine) + rng.choice([-2, -1, 1, 2]))
    else:
        value = float(mine.replace(",", ""))
        changed = value * rng.choice([0.5, 0.75, 1.5, 2]) if value >= 10 else value + rng.choice([1, 2, 3])
        other = f"{changed:,.0f}" if "," in mine else (f"{changed:g}" if "." in mine else str(round(changed)))
    return re.sub(rf"(?<![\w.,]){re.escape(mine)}(?!\w)", lambda _: other, sentence, count=1)


def _opposite(sentence: str, document: str, rng: random.Random) -> str | None:
    # Only opposites in the same form ("rose"/"fell", not "approved"/"reject"), so that the error is not also a slip
    # of grammar the model could learn instead.
    words = [(match, other) for match in re.finditer(r"[A-Za-z]+", sentence)
             for other in sorted(OPPOSITE.get(match.group().lower(), ())) if _form(other) == _form(match.group())]
    if not words:
        return None
    match, word = rng.choice(words)
    if match.group()[0].isupper():
        word = word[0].upper() + word[1:]
    return sentence[:match.start()] + word + sentence[match.end():]


def _form(word: str) -> str:
    return next((ending for ending in ("ing", "ed", "s") if word.lower().endswith(ending)), "")


def _exchange_names(sentence: str, document: str, rng: random.Random) -> str | None:
    """Who did what to whom reversed: two names of the sentence trade places."""
    own = [name for name in names(sentence) if sentence.count(name) == 1]
    own = [name for name in own if not any(name != other and (name in other or other in name) for other in own)]
    if len(own) < 2:
        return None
    first, second = rng.sample(own, 2)
    marker = "\x00"
    return sentence.replace(first, marker).replace(second, first).replace(marker, second)


def made_examples(source: Sequence[str], faithful: Sequence[str], chosen: Sequence[int],
                  rng: random.Random) -> list[tuple[str, int]]:
    """(sentence, 1 if it carries an error) made for one document: near-copies of the chosen document sentences
    (faithful), and one planted error in each chosen document sentence and each faithful summary sentence."""
    document = "\n".join(source)
    out: list[tuple[str, int]] = []
    for index in chosen:
        out += [(text, 0) for text in near_copies(source[index], document)]
        made = planted(source[index], document, rng)
        if made:
            out.append((made, 1))
    for sentence in faithful:
        made = planted(sentence, document, rng)
        if made:
            out.append((made, 1))
    return out
