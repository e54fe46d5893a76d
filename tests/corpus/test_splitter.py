"""The splitter gives syntok's sentences, span for span: on the gold set, on every text file the tests and benchmarks
hold, and on generated text made of what syntok's rules look at (abbreviations, brackets, quotes, terminals,
numbers, months, contractions, hyphens, non-ASCII letters, odd spaces)."""

from pathlib import Path

import syntok.segmenter as syntok
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.segmentation_gold import GOLD
from corpus.segmentation import split_sentences
from corpus.splitter import Tokens, _tokenize_at_spaces, sentence_spans, spaces_decide, tokenize

ROOT = Path(__file__).resolve().parents[2]


def syntok_sentences(text: str) -> list[str]:
    """The sentences as syntok's own `analyze` gives them, line by line: what the import stored before."""
    sentences = []
    for line in text.splitlines():
        if not line.strip():
            continue
        for paragraph in syntok.analyze(line):
            for tokens in paragraph:
                piece = line[tokens[0].offset:tokens[-1].offset + len(tokens[-1].value)].strip()
                if piece:
                    sentences.append(piece)
    return sentences


def syntok_spans(line: str) -> list[tuple[int, int]]:
    return [(tokens[0].offset, tokens[-1].offset + len(tokens[-1].value))
            for paragraph in syntok.analyze(line) for tokens in paragraph]


def test_the_gold_set_splits_as_with_syntok():
    for kind, sentences in GOLD.items():
        text = " ".join(sentences)
        assert split_sentences(text) == syntok_sentences(text) == sentences, kind


def test_every_text_file_of_the_repository_splits_as_with_syntok():
    files = [path for folder in ("tests/fixtures", "benchmarks/data") for path in (ROOT / folder).rglob("*")
             if path.suffix in {".json", ".jsonl", ".csv", ".txt", ".md"}]
    assert len(files) > 20
    checked = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert split_sentences(text) == syntok_sentences(text), path
        checked += len(text.splitlines())
    assert checked > 1000


def syntok_tokens(text: str) -> tuple[list[str], list[int], list[bool]]:
    from syntok.tokenizer import Tokenizer

    expected = list(Tokenizer(replace_not_contraction=False).tokenize(text))
    return ([token.value for token in expected], [token.offset for token in expected],
            [bool(token.spacing) for token in expected])


def as_lists(tokens: Tokens) -> tuple[list[str], list[int], list[bool]]:
    return tokens.values, tokens.offsets, tokens.spaced


def test_tokens_match_syntok_value_spacing_and_offset():
    text = ("  \"Dr. O'Neil's co-op,\" she said (p. 5)... didn't iPhone-like U.S.-based \u02bctwas naïve 3.5m "
            "#tag__x 東京, ok?!  ")
    assert as_lists(tokenize(text)) == syntok_tokens(text)


# One line for each of syntok's rules, with the case on either side of it where there are two.
RULE_LINES = [
    "Ask Dr. In the end it worked. Ask Dr. Smith. It is at St. Mary's.",  # a starter after an abbreviation
    "We met Mr. Ortega. He left. Take Co.) Then go.",  # an abbreviation before a closing bracket
    "Item no. 5 is here. See No. 12b and NO. 7. It was no. It is.",  # "no." before a number
    "It rose 3.5 percent.5 and then.12 more. Then 2. 2019 was good. 1. Jan 5 was cold.",  # numbers after a terminal
    "He said.It is odd.Then A.Then Ab.Then. Stop.OK then. Stop.NASA said.",  # no spacing after the terminal
    "It costs 100. 500 people came. 12. 45 went.",  # a large number after the terminal
    "It was on 5. Jan. and on Jan. 6 there. In Dec. 2019 it ended. On 3. May it rained.",  # months
    "Use e.g. This one. See U.S. Army. I.e. Both. In the U.S.. The end. It is e.g.. Then.",  # a dot inside
    "It ended. , Then more. Stop. : Next one.",  # inner punctuation after the terminal
    "A. Then B. Then I. Then IV. Then x. Then e. Then Ab. Then.",  # single letters, roman numerals, consonants
    "Part II. The end. See I. The start.",  # a roman numeral at a sentence's first token
    "It ended. (This is an aside.) Next one. It ended. (see below) and more. It ended (Fig. 2). Then.",  # brackets
    "It ended. (And this bracket holds a long aside that is certainly more than seventy characters long.) Next.",
    "Stop. (a) first, (b) second. Stop. (Ab) cd. Stop. [1], [2]. Stop. (x): y.",  # the token after the brackets
    "He said \"stop.\" Then he left. \"Go!\" she said. 'No.' It ended.\" Quote. It (ended.) Then.",  # quotes
    "It went on... and on... Then it stopped... It did! Really? Yes; no. Wow?! Ok.",  # other terminals
    "It (ended. " + " ".join(["x"] * 42) + ") Then. (" + " ".join(["word"] * 55) + ") After. (" + " ".join(["Word."] * 10) + ") After.",  # a bracket's reach
    "(" + "(" * 3 + "deep" + ")" * 3 + ") Nested. (A b (c d) e.) Then. {x [y] z}. Done.",  # nested brackets
    "Hello. 東京は大きい。 Next！ Ärger. Über alles. ʼTwas it. naïve. É bien.",  # non-ASCII letters and terminals
    "Don't stop. It isn't. O'Neil's co-op. well-known_thing. iPhone.The end. a,b;c. 3-D. x-2.",  # word splits
]


def test_each_rule_of_syntok_splits_as_with_syntok():
    for line in RULE_LINES:
        assert sentence_spans(line) == syntok_spans(line), line


# What syntok's rules turn on: each is a piece of a generated line, glued to the next or spaced from it.
PIECES = [
    "the", "The", "However", "In", "it", "iPhone", "McDonald", "U.S.", "e.g.", "i.e.", "Dr", "Mr", "Ms", "St", "etc",
    "Inc", "Fig", "no", "No", "NO", "Jan", "Dec", "may", "5", "2019", "123", "3.5", "12th", "A", "b", "x", "I", "IV",
    "XX", "don't", "can't", "it's", "O'Neil", "well-known", "co_op", "a,b", "x;y", "ʼtwas", "naïve", "Ärger", "東京",
    "é", "É", "ß", "٣", "²", "<CODE_1>", "#Person1#", "USER:", ".", "!", "?", ";", "...", "…", "。", "！", "?!", ",",
    ":", "(", ")", "[", "]", "{", "}", "（", "）", '"', "'", "’", "”", "“", "«", "»", "-", "--", "—", "–", "\u00ad",
    "_", "/", "&", "%", "$", "@", "\u200b",
]
SPACES = ["", " ", " ", " ", "  ", "\t", "\xa0", "\u3000", "\u2009", "\x1f", "\x1c"]
# A few pieces per line, so that the combinations the rules test (an abbreviation, a terminal, a starter) come up.
lines = st.lists(st.sampled_from(PIECES), min_size=1, max_size=8, unique=True).flatmap(
    lambda alphabet: st.lists(st.tuples(st.sampled_from(alphabet), st.sampled_from(SPACES)), max_size=40)).map(
    lambda pieces: "".join(piece + space for piece, space in pieces))


@settings(max_examples=1500, deadline=None)
@given(lines)
def test_generated_lines_split_as_with_syntok(line):
    for part in line.splitlines():
        assert sentence_spans(part) == syntok_spans(part)
    assert split_sentences(line) == syntok_sentences(line)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_any_text_splits_as_with_syntok(text):
    assert split_sentences(text) == syntok_sentences(text)


# Lines spaced by plain spaces alone, which are tokenized a run of words at a time when their words hold no
# separation (no lowercase letter before an uppercase one, no letter-like apostrophe).
spaced_lines = st.lists(st.sampled_from(PIECES), min_size=1, max_size=8, unique=True).flatmap(
    lambda alphabet: st.lists(st.tuples(st.sampled_from(alphabet), st.sampled_from(["", " ", " ", " ", "  "])),
                              max_size=40)).map(lambda pieces: "".join(piece + space for piece, space in pieces))


@settings(max_examples=1500, deadline=None)
@given(spaced_lines)
def test_lines_spaced_by_spaces_tokenize_and_split_as_with_syntok(line):
    for part in line.splitlines():
        assert as_lists(tokenize(part)) == syntok_tokens(part)
        if part and spaces_decide(part):
            assert as_lists(_tokenize_at_spaces(part)) == syntok_tokens(part)
        assert sentence_spans(part) == syntok_spans(part)


def test_the_words_between_spaces_are_taken_whole_only_where_they_hold_no_separation():
    assert spaces_decide("The council met. It voted 7-2 (after a debate) on Monday...")
    assert spaces_decide("naïve Ärger 東京. Über alles")
    for line in ["It sold the iPhone.", "Ask McDonald", "ʼtwas so", "tab\there", "no\xa0break", "zero\u200bwidth"]:
        assert not spaces_decide(line), line
