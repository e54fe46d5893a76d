"""Sentences of a document with one name exchanged for another name of the same document: an entity error (paper
appendix C, table 11: a wrong person, place or organisation in an otherwise faithful sentence).

The offline labeler misses many of these: every name is in the document and no number or word changes, though its
name probes catch a swap when the right name fits the sentence's passage clearly better. When the offline labeler is
the AI an FV check shows, a swap it passes is a check whose genuine AI judgment is "no error" while the sentence is
certainly wrong: the check that catches an annotator who follows the AI (paper G.3), which a foreign sentence cannot
give once the labeler flags every foreign sentence. The build tries candidates until the labeler passes one
(annotation.quality.injection, NAME_SWAP_TRIES).

Pure functions of the document's sentences, so a build finds the same candidates every time.
"""

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from assist.llm.offline_checks import NAME, analyse, fold

# A run of capitalised words of letters ("Anna Lindqvist", "New Zealand", "Saint-Denis") between spaces and
# punctuation: not "I'm", not a word inside markup ("<p>Welcome</p>"); a possessive ending stays outside the run.
_WORD = r"[A-Z][a-z]+(?:-[A-Z]?[a-z]+)*"
_RUN = re.compile(rf"(?<= ){_WORD}(?: {_WORD})*(?=(?:['’]s)?[ ,.;:!?)]|(?:['’]s)?$)")
# Sentences of the length of a summary sentence: a one-liner or a paragraph-long sentence would stand out.
_WORDS = (8, 40)


@dataclass(frozen=True)
class NameSwap:
    text: str  # The source sentence with `wrong` where it has `right`.
    right: str
    wrong: str
    sentence: int  # Index of the source sentence it was made from.


def names_in(sentence: str, lower_case: set[str] = frozenset()) -> list[re.Match]:
    """Runs of capitalised words inside the sentence (never its first word) that the labeler's analysis reads as
    names, word for word, and none of which the document also writes in lower case (`lower_case`: "Welcome" at the
    start of a quoted line is a word, not a name, when the document says "welcome" elsewhere)."""
    names = {fold(item.text) for item in analyse(sentence).items if item.kind == NAME and not item.opens_sentence}
    return [run for run in _RUN.finditer(sentence)
            # Not the end of a name that opens the sentence ("Hughes" of "Mark Hughes, who ...").
            if not re.search(r"[A-Z][\w’'-]*$", sentence[:run.start() - 1])
            and all(fold(word) in names and word.lower() not in lower_case for word in run[0].split())]


def lower_case_words(sentences: Sequence[str]) -> set[str]:
    return {word for sentence in sentences for word in re.findall(r"\b[a-z]+\b", sentence)}


def name_swaps(sentences: Sequence[str], rng: random.Random) -> Iterator[NameSwap]:
    """Candidate sentences in a seeded random order: a name of one source sentence replaced by a name with as many
    words that the document uses elsewhere, sharing no word with it (so not a part or an alias of the same name
    such as "Obama" for "Barack Obama"), and written nowhere in the sentence or its neighbours."""
    lower_case = lower_case_words(sentences)
    found = [(index, run) for index, sentence in enumerate(sentences)
             if _WORDS[0] <= len(sentence.split()) <= _WORDS[1] for run in names_in(sentence, lower_case)]
    every_name = sorted({run[0] for sentence in sentences for run in names_in(sentence, lower_case)})
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
