"""Sentences of a document with one name exchanged for another name of the same document: an entity error (paper
appendix C, table 11: a wrong person, place or organisation in an otherwise faithful sentence).

The offline labeler cannot see this error by construction: every name it checks is in the document, no number,
negation or opposite word changes, and the embedding barely moves. So when the offline labeler is the AI an FV check
shows, such a sentence is a check whose genuine AI judgment is "no error" while the sentence is certainly wrong: the
check that catches an annotator who follows the AI (paper G.3), which a foreign sentence cannot give once the labeler
flags every foreign sentence.

Pure functions of the document's sentences, so a build finds the same candidates every time.
"""

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from assist.llm.offline_checks import NAME, analyse, fold

# A run of capitalised words ("Anna Lindqvist", "New Zealand"); a possessive ending stays outside the run.
_RUN = re.compile(r"[A-Z][\w’'-]*?(?=['’]s\b|[^\w’'-]|$)(?:\s+[A-Z][\w’'-]*?(?=['’]s\b|[^\w’'-]|$))*")
# Sentences of the length of a summary sentence: a one-liner or a paragraph-long sentence would stand out.
_WORDS = (8, 40)


@dataclass(frozen=True)
class NameSwap:
    text: str  # The source sentence with `wrong` where it has `right`.
    right: str
    wrong: str
    sentence: int  # Index of the source sentence it was made from.


def names_in(sentence: str) -> list[re.Match]:
    """Runs of capitalised words inside the sentence (never its first word) that the labeler's analysis reads as
    names, word for word."""
    names = {fold(item.text) for item in analyse(sentence).items if item.kind == NAME and not item.opens_sentence}
    return [run for run in _RUN.finditer(sentence)
            if run.start() > 0 and all(fold(word) in names for word in run[0].split())]


def name_swaps(sentences: Sequence[str], rng: random.Random) -> Iterator[NameSwap]:
    """Candidate sentences in a seeded random order: a name of one source sentence replaced by a name with as many
    words that the document uses elsewhere, sharing no word with it (so not a part or an alias of the same name
    such as "Obama" for "Barack Obama"), and written nowhere in the sentence or its neighbours."""
    found = [(index, run) for index, sentence in enumerate(sentences)
             if _WORDS[0] <= len(sentence.split()) <= _WORDS[1] for run in names_in(sentence)]
    every_name = sorted({run[0] for sentence in sentences for run in names_in(sentence)})
    rng.shuffle(found)
    for index, run in found:
        near = " ".join(sentences[max(0, index - 1):index + 2]).lower()
        words = {fold(word) for word in run[0].split()}
        others = [name for name in every_name if len(name.split()) == len(run[0].split())
                  and not words & {fold(word) for word in name.split()}
                  and not any(fold(word) in near for word in name.split())]
        if not others:
            continue
        wrong = rng.choice(others)
        sentence = sentences[index]
        yield NameSwap(sentence[:run.start()] + wrong + sentence[run.end():], run[0], wrong, index)
