"""The sentence splitter: syntok 1.4.4's tokenizer and segmenter rules, run over plain lists instead of objects.

syntok (segtok v2) got every sentence of the hand-segmented gold set right (benchmarks/segmentation.py), and its
rules stay exactly as they are; only the way they run changed, because splitting was ~90% of an import's CPU time:
- tokens are three parallel lists (value, whether spacing precedes it, offset), not Token objects;
- the segmenter is one loop over indexes instead of a state object per token; it finds a line's candidate
  boundaries (a terminal or an opening bracket) in one pass and jumps from one to the next;
- the commonest chunk between two spaces, one ASCII word with optional punctuation around it, is tokenized without
  the sub-word regex, which can only split such a word where a lowercase letter meets an uppercase one;
- a line spaced by plain spaces alone, whose words hold no such meeting, is cut with `str.split`, and its runs of
  plain words become tokens a run at a time (nine chunks in ten of the scale benchmark's text).
Its output is syntok's, span for span: tests/corpus/test_splitter.py compares the two on the gold set, the
repository's texts and generated text made of the tokens the rules look at; benchmarks/segmentation.py compares them
on a whole UniSumEval-scale file.

syntok is Copyright (c) 2018-2022 Florian Leitner, under the MIT License: "Permission is hereby granted, free of
charge, to any person obtaining a copy of this software and associated documentation files (the "Software"), to
deal in the Software without restriction, including without limitation the rights to use, copy, modify, merge,
publish, distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions: The above copyright notice and this permission notice
shall be included in all copies or substantial portions of the Software. THE SOFTWARE IS PROVIDED "AS IS", WITHOUT
WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS
FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY
CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE."
"""

import re
from bisect import bisect_left
from itertools import accumulate, compress, count
from operator import add, not_

import regex

# --- The tokenizer's rules -------------------------------------------------------------------------------------

HYPHENS = "\u00AD\u058A\u05BE\u0F0C\u1400\u1806\u2010\u2011\u2012\u2e17\u30A0-"
HYPHENS_AND_UNDERSCORE = frozenset(HYPHENS + "_")
APOSTROPHES = "'\u00B4\u02B9\u02BC\u2019\u2032"
APOSTROPHE_T = regex.compile("[" + APOSTROPHES + "]t")
# Where a word is split further: lowercase-uppercase transitions, apostrophes and their tail, brackets, an inner
# ellipsis, and commas, semicolons, underscores or hyphens between letters (or a letter and a digit).
SEPARATION = regex.compile(
    r"(?<=\p{Ll})[.!?]?(?=\p{Lu})|"
    r"[" + APOSTROPHES + r"]\p{L}+|"
    r"[\p{Ps}\p{Pe}]|"
    r"\.\.\.|"
    r"(?<=\p{L})[,;_" + HYPHENS + r"](?=[\p{L}\p{Nd}])|"
    r"(?<=[\p{L}\p{Nd}])[,;_" + HYPHENS + r"](?=\p{L})"
)
# Chunks are split at Unicode whitespace (the regex module's \s, which differs from re's at \x1c-\x1f) and the
# zero-width space.
WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
CHUNKS = re.compile(f"[^{WHITESPACE}\u200b]+")
# What keeps a line from being chunked at its spaces alone: other spacing, or a separation an alphanumeric chunk
# may hold (a lowercase letter before an uppercase one, a letter-like apostrophe). Python's `re` finds the spacing
# and the apostrophes several times faster than `regex`; a line of ASCII needs no Unicode letter classes.
OTHER_SPACING = re.compile(f"[{WHITESPACE.replace(' ', '')}\u200b\u02B9\u02BC]")
# In a line of ASCII, every lowercase letter made "a" and every uppercase one "A": a transition is "aA".
LETTER_CASES = bytes.maketrans(bytes(range(ord("a"), ord("z") + 1)) + bytes(range(ord("A"), ord("Z") + 1)),
                               b"a" * 26 + b"A" * 26)
LOWER_UPPER = regex.compile(r"\p{Ll}\p{Lu}")
# Every ASCII character that is not a letter or a digit: what strips a chunk down to its word.
ASCII_NON_ALNUM = "".join(c for c in map(chr, range(128)) if not c.isalnum())

# --- The segmenter's rules -------------------------------------------------------------------------------------

OPENING_BRACKETS = frozenset("([{\uFF5F\uFF5B\uFF3B\uFF08\uFE5D\uFE5B\uFE59\uFD3E\u301A\u3018\u2985\u2983\u2329")
CLOSING_BRACKETS = frozenset(")]}\uFF60\uFF5D\uFF3D\uFF09\uFE5E\uFE5C\uFE5A\uFD3F\u301B\u3019\u2986\u2984\u232A")
CLOSING_QUOTES = frozenset("'\"\u00B4\u2019\u201D\u232A\u27E9\u27EB\u2E29\u3009\u300B\u301E")
TERMINALS = frozenset({"..."} | set(".!?;\u203C\u203D\u2047\u2048\u2049\u3002\uFE52\uFE57\uFF01\uFF0E\uFF1F\uFF61"))
# Tokens where a sentence may end or a bracketed aside may start; every other token just extends the sentence.
CANDIDATES = TERMINALS | OPENING_BRACKETS
POST_TERMINAL = TERMINALS | CLOSING_BRACKETS
INNER_PUNCTUATION = frozenset(",;:")
# After a terminal, these tokens are taken into the sentence or looked past (more terminals, closing brackets and
# quotes, an opening bracket); any other token right after a terminal is the one the decision turns on.
NOT_PLAIN_AFTER_TERMINAL = POST_TERMINAL | CLOSING_QUOTES | OPENING_BRACKETS
# Bracketed text shorter than this is stepped over even when it looks like a sentence (a citation, an aside).
MAX_BRACKET_SKIP = 70
VOWELS = frozenset("aeiouáéííóúäëïöüåæø" + "aeiouáéííóúäëïöüåæø".upper())
ROMAN_NUMERALS = frozenset("I II III IV V VI VII VIII IX X XI XII XIII XIV XV XVI XVII XVIII XIX XX "
                           "XXI XXII XXIII XXIV XXV".split())
MONTHS = frozenset("""
    Jän Jan en ene Ene feb febr Feb Mär Mar mzo Mzo Apr abr abl Abr may May jun Jun
    jul Jul ago agto Aug sep Sep sept Sept setbre set
    oct octbre Oct Okt nov novbre Nov dic dicbre Dic Dez Dec
""".split())
# Abbreviations written without inner dots, after which a period does not end the sentence.
ABBREVIATIONS = frozenset("""
    Abb adm Adm Abs afmo alt Alt Anl ap apdo approx Approx art Art atte atto Aufl ave Ave Az
    bmo Bmo brig Bd Brig bsp Bsp bspw bzgl bzw ca cap capt Capt cf cmdt Cmdt cnel Cnel Co col Col Corp
    de Dr dgl dt emp en es etc evtl excl exca Exca excmo Excmo exsmo Exsmo ff fig Fig figs Figs fr Fr
    gal gen Gen ggf gral Gral GmbH gob Gob Hd hno Hno hnos Hnos Inc incl inkl lic Lic lit ldo Ldo Ltd
    mag Mag max med Med Min min Mio mos Mr mr Mrd Mrs mrs Ms ms Mt mt MwSt nat Nat Nr nr ntra Ntra ntro Ntro
    pag phil prof Prof rer Rer resp sci Sci Sen Sr sr Sra sra Srta srta St st synth tab Tab tel Tel
    univ Univ Urt vda Vda vol Vol vs vta zB zit zzgl
    Mo Mon lun Di Tue mar Mi Wed mie mié Do Thu jue Fr Fri vie Sa Sat sab So Sun dom
""".split())
# Capitalised words that start a sentence even after an abbreviation-like token.
STARTERS = frozenset("""
    Above Accordingly Additionally Admittedly All
    Also Although Again And Are As Assuredly
    Because Besides
    Certainly Chiefly Comparatively Consequently Conversely Coupled Correspondingly
    Does Due Especially For Furthermore Granted Generally Hence How However
    Identically In Indeed Instead It Its Likewise Moreover Nevertheless No
    Obviously Of On Ordinarily Other Otherwise Outside Particularly Rather
    Similarly Since Singularly Still So Subsequently
    That The Therefore Thereupon This Thus Unquestionably Use Usually
    What Where Whereas Wherefore Why Yet
    Auch Da Dabei Dadurch Daher Darauf Darum Das Dein Der Deswegen Die Du
    Ich Ihr Ihnen Er Es Euer Mein Nämlich Sie Sein So Somit Sonst
    Unser Warum Was Wegen Weil Wer Weshalb Wie Wieso Wir
    A Algunas Algunos De Desde Debido El Ella En Hay La Las Los No
    Otra Otro Para Por Porque Se También Todas Todos
""".split())


class Tokens:
    """A line's tokens as three lists: the value, whether any spacing (whitespace, or a hyphen or underscore that
    was not emitted) precedes it, and its offset in the line."""

    __slots__ = ("values", "spaced", "offsets")

    def __init__(self) -> None:
        self.values: list[str] = []
        self.spaced: list[bool] = []
        self.offsets: list[int] = []

    def add(self, spaced: bool, value: str, offset: int) -> None:
        self.values.append(value)
        self.spaced.append(spaced)
        self.offsets.append(offset)


def _plain_word(word: str) -> bool:
    """An ASCII word in which no lowercase letter is followed by an uppercase one: the only separation an ASCII
    alphanumeric word can hold, so it is one token."""
    return word.isalnum() and word.isascii() and (word.islower() or word.istitle() or word.isupper()
                                                  or word.isdigit())


def tokenize(text: str) -> Tokens:
    """syntok's tokenizer without its n't rewrite (as its `analyze` runs it): the same tokens, spacing and
    offsets."""
    if text and spaces_decide(text):
        return _tokenize_at_spaces(text)
    tokens = Tokens()
    position = 0  # where the previous chunk ended: any spacing before this one starts there
    for chunk_match in CHUNKS.finditer(text):
        chunk_start, chunk_end = chunk_match.span()
        _add_chunk(tokens, text, chunk_start, chunk_end, chunk_start > position)
        position = chunk_end
    if position < len(text):  # the spacing that ends the text: an empty token
        tokens.add(True, "", len(text))
    return tokens


def spaces_decide(text: str) -> bool:
    """Whether the line's only spacing is the plain space and none of its alphanumeric chunks holds a separation:
    then each such chunk is one token."""
    if OTHER_SPACING.search(text):
        return False
    if text.isascii():
        return b"aA" not in text.encode("ascii").translate(LETTER_CASES)
    return LOWER_UPPER.search(text) is None


def _tokenize_at_spaces(text: str) -> Tokens:
    """A line whose only spacing is the plain space and whose alphanumeric chunks are one token each: the chunks
    come from `str.split`, and the plain words among them (nine in ten of the scale benchmark's) are taken a run at
    a time, so that only the other chunks are looked at one by one."""
    tokens = Tokens()
    values, spaced, offsets = tokens.values, tokens.spaced, tokens.offsets
    chunks = text.split(" ")
    starts = list(map(add, accumulate(map(len, chunks), initial=0), count()))  # chunk i follows i spaces
    done = 0
    for index in compress(count(), map(not_, map(str.isalnum, chunks))):  # an empty chunk is two spaces in a row
        values += chunks[done:index]
        offsets += starts[done:index]
        spaced += [True] * (index - done)
        if chunk := chunks[index]:
            start = starts[index]
            # A word with one symbol after it or before it ("end.", "said,", "(see"): two tokens.
            if chunk[:-1].isalnum():
                values += (chunk[:-1], chunk[-1])
                offsets += (start, start + len(chunk) - 1)
                spaced += (start > 0, False)
            elif chunk[1:].isalnum():
                values += (chunk[0], chunk[1:])
                offsets += (start, start + 1)
                spaced += (start > 0, False)
            else:
                _add_chunk(tokens, text, start, start + len(chunk), start > 0)
        done = index + 1
    values += chunks[done:]
    offsets += starts[done:len(chunks)]
    spaced += [True] * (len(chunks) - done)
    if chunks[0].isalnum():  # the line's first word has nothing before it
        spaced[0] = False
    if not chunks[-1]:  # the spacing that ends the text: an empty token
        tokens.add(True, "", len(text))
    return tokens


def _add_chunk(tokens: Tokens, text: str, chunk_start: int, chunk_end: int, spaced: bool) -> None:
    """The tokens of `text[chunk_start:chunk_end]`, a chunk between two spacings: the symbols before its word one
    by one, the word (split at its separations), an ellipsis right after it, then the symbols after it."""
    add_value, add_spaced, add_offset = tokens.values.append, tokens.spaced.append, tokens.offsets.append
    chunk = text[chunk_start:chunk_end]
    if _plain_word(chunk):
        add_value(chunk)
        add_spaced(spaced)
        add_offset(chunk_start)
        return
    if chunk.isascii():
        core = chunk.lstrip(ASCII_NON_ALNUM)
        start = chunk_end - len(core)
        end = start + len(core.rstrip(ASCII_NON_ALNUM))
    else:
        start = _word_start(text, chunk_start, chunk_end)
        end = _word_end(text, start, chunk_end)
    if start == chunk_end:  # nothing alphanumeric: the whole chunk is one token ("...", "--", "?!")
        add_value(chunk)
        add_spaced(spaced)
        add_offset(chunk_start)
        return
    for index in range(chunk_start, start):  # each symbol before the word; the first carries the spacing
        add_value(text[index])
        add_spaced(spaced)
        add_offset(index)
        spaced = False
    word = text[start:end]
    if _plain_word(word):
        add_value(word)
        add_spaced(spaced)
        add_offset(start)
    else:
        _split_word(tokens, spaced, word, start)
    tail = end
    if text.startswith("...", end, chunk_end):
        add_value("...")
        add_spaced(False)
        add_offset(end)
        tail += 3
    for index in range(tail, chunk_end):
        add_value(text[index])
        add_spaced(False)
        add_offset(index)


def _word_start(text: str, start: int, end: int) -> int:
    for index in range(start, end):
        if text[index].isalnum():
            return index
    return end


def _word_end(text: str, start: int, end: int) -> int:
    for index in range(end - 1, start - 1, -1):
        if text[index].isalnum():
            return index + 1
    return start


def _split_word(tokens: Tokens, spaced: bool, word: str, offset: int) -> None:
    """A word with separations: the pieces between them, and each separator that is emitted (not a hyphen or an
    underscore, which become the next piece's spacing); "n't" stays one token."""
    remainder = 0
    for match in SEPARATION.finditer(word):
        match_start, match_end = match.span()
        separator = match.group()
        if match_start > remainder:
            if word[match_start - 1] == "n" and APOSTROPHE_T.fullmatch(separator):
                if remainder < match_start - 1:
                    tokens.add(spaced, word[remainder:match_start - 1], offset + remainder)
                    spaced = False
                tokens.add(spaced, "n" + separator, offset + match_start - 1)
                spaced = False
                remainder = match_end
                continue
            tokens.add(spaced, word[remainder:match_start], offset + remainder)
            spaced = False
        if separator and separator not in HYPHENS_AND_UNDERSCORE:
            tokens.add(spaced, separator, offset + match_start)
            spaced = False
        elif separator:
            spaced = True
        remainder = match_end
    if remainder == 0:
        tokens.add(spaced, word, offset)
    elif remainder < len(word):
        tokens.add(spaced, word[remainder:], offset + remainder)


# --- The segmenter ---------------------------------------------------------------------------------------------

# syntok's segmenter states, as far as they differ between two steps: at a sentence's first token or inside it,
# and the two that end a sentence.
FIRST, INNER, TERMINAL, END = range(4)


class _Segmenter:
    """syntok's segmenter state machine over a token list. `position` is the first token not yet taken into the
    current sentence (syntok's queue head); the sentence so far is `values[sentence_start:position]`."""

    __slots__ = ("values", "spaced", "offsets", "count", "candidates", "position", "sentence_start")

    def __init__(self, tokens: Tokens) -> None:
        self.values, self.spaced, self.offsets = tokens.values, tokens.spaced, tokens.offsets
        self.count = len(self.values)
        # The indexes of the tokens where a sentence may end or a bracket open, found in one pass.
        self.candidates = list(compress(range(self.count), map(CANDIDATES.__contains__, self.values)))
        self.position = 0
        self.sentence_start = 0

    def sentences(self) -> list[tuple[int, int]]:
        """Each sentence as (first token, one past its last token)."""
        found = []
        state = FIRST if self.count else END
        while True:
            if state == FIRST:
                state = self._first_token()
            elif state == INNER:
                state = self._inner_token()
            else:
                start, stop = self.sentence_start, self.position
                # A sentence of one empty token (the spacing that ends a line) is no sentence.
                if stop > start and (stop - start > 1 or self.values[start]):
                    found.append((start, stop))
                self.sentence_start = stop
                if state == END or stop >= self.count:
                    return found
                state = FIRST

    def _next(self) -> str | None:
        """The next token (syntok's queue head), None at the end."""
        return self.values[self.position] if self.position < self.count else None

    def _next_has_no_spacing(self) -> bool:
        return self.position < self.count and not self.spaced[self.position]

    def _last(self) -> str:
        """The sentence's last token so far."""
        return self.values[self.position - 1] if self.position > self.sentence_start else ""

    def _first_token(self) -> int:
        following = self._next()
        # A sentence opened by a bracket: the bracketed text is a sentence of its own.
        if following is not None and following in OPENING_BRACKETS and self._skip_bracketed_text():
            following = self._next()
            if self.position - self.sentence_start > 3 and not (following is not None and following[:1].islower()):
                return TERMINAL
        if self.position >= self.count:
            return END
        self.position += 1
        following = self._next()
        if following is not None and (following in TERMINALS or following == "("):
            return self._maybe_terminal(FIRST)
        return INNER

    def _inner_token(self) -> int:
        values, count = self.values, self.count
        if self.position >= count:
            return END
        # The ordinary tokens up to the next candidate boundary only extend the sentence.
        candidates = self.candidates
        following = bisect_left(candidates, self.position + 1)
        position = candidates[following] if following < len(candidates) else count
        self.position = position
        if position >= count:
            return INNER
        if values[position] in OPENING_BRACKETS:
            self._skip_bracketed_text()
        following = self._next()
        if following is not None and following in CANDIDATES:
            return self._maybe_terminal(INNER)
        return INNER

    def _bracket_end(self) -> tuple[int, bool]:
        """With an opening bracket next: how far ahead its closing bracket is (0: none within 50 tokens), and
        whether the bracketed text looks like a sentence (a capitalised first word, a terminal after a word)."""
        values, count, head = self.values, self.count, self.position
        depth, ahead = 1, 1
        first_is_title = None
        last_is_terminal = False
        while head + ahead < count and ahead < 50:
            value = values[head + ahead]
            if first_is_title is None and value.isalnum():
                first_is_title = value.istitle()
            elif first_is_title and value.isalnum():
                last_is_terminal = head + ahead + 1 < count and values[head + ahead + 1] in TERMINALS
            if value in OPENING_BRACKETS:
                depth += 1
            elif value in CLOSING_BRACKETS:
                depth -= 1
                if depth == 0:
                    break
            ahead += 1
        return (ahead if depth == 0 else 0), bool(first_is_title and last_is_terminal)

    def _skip_bracketed_text(self) -> bool:
        """Take short or sentence-less bracketed text into the sentence whole."""
        closing, has_inner_sentence = self._bracket_end()
        if closing > 0:
            close = self.position + closing
            length = self.offsets[close] + len(self.values[close]) - self.offsets[self.position]
            if length < MAX_BRACKET_SKIP or not has_inner_sentence:
                self.position = close + 1
                return True
        return False

    def _token_after_brackets(self) -> str:
        closing, has_inner_sentence = self._bracket_end()
        after = self.position + closing + 1
        if closing > 0 and not has_inner_sentence and after < self.count:
            return self.values[after]
        return ""

    def _token_after_next(self) -> str:
        return self.values[self.position + 1] if self.position + 1 < self.count else ""

    def _take_post_terminals(self, token: str | None) -> str | None:
        """Take the terminals and closing brackets that follow; return `token`, or else the first one taken."""
        values, count = self.values, self.count
        while self.position < count and values[self.position] in POST_TERMINAL:
            self.position += 1
            if self.position >= count:
                break
            if token is None:
                token = values[self.position - 1]
        return token

    def _move_past_terminal(self) -> str:
        """Take the terminal's closing brackets, quotes and further terminals into the sentence; return the token
        that decides (the first one taken, an opening bracket, or else the next)."""
        values, count = self.values, self.count
        token: str | None = None
        following = self._next()
        if following is not None and following in OPENING_BRACKETS and self._last() not in TERMINALS:
            self._skip_bracketed_text()
        else:
            token = self._take_post_terminals(token)
            if self.position < count and values[self.position] in CLOSING_QUOTES and self._next_has_no_spacing():
                self.position += 1
                if self.position < count and token is None:
                    token = values[self.position - 1]
            token = self._take_post_terminals(token)
            if self.position < count and values[self.position] in OPENING_BRACKETS:
                token = values[self.position]
        if token is None and self.position < count:
            token = values[self.position]
        return "" if token is None else token

    def _maybe_terminal(self, state: int) -> int:
        """With a terminal or an opening bracket next: take it, and decide whether the sentence ends here
        (TERMINAL) or goes on (`state`)."""
        values, count, position = self.values, self.count, self.position
        before = values[position - 1] if position > self.sentence_start else ""
        if values[position] in OPENING_BRACKETS:
            after = self._move_past_terminal()
        else:
            position = self.position = position + 1
            if position >= count:
                after = ""
            elif values[position] in NOT_PLAIN_AFTER_TERMINAL:
                after = self._move_past_terminal()
            else:  # an ordinary token after the terminal decides, as _move_past_terminal would find
                after = values[position]
        following = self._next() or ""  # at the end, none of the tests on the next token below holds
        if following[:1].islower() or following in INNER_PUNCTUATION:
            return state
        if not (state == FIRST and _single_letter_or_roman_numeral(before)) and following in STARTERS:
            return TERMINAL
        if before in ABBREVIATIONS and after not in CLOSING_BRACKETS:
            return state
        if before in ("no", "No", "NO") and any(c.isnumeric() for c in following) and following.isalnum():
            return state
        no_spacing = self._next_has_no_spacing()
        if following.isnumeric() and no_spacing:
            return state
        if no_spacing and (not after.istitle() or not after.isalpha() or len(after) == 1):
            return state
        if following.isnumeric() and len(following) > 2:
            return state
        if before.isnumeric() and following in MONTHS:
            return state
        if before in MONTHS and following.isnumeric():
            return state
        if "." in before and after != ".":
            return state
        if (state == FIRST or before.isupper()) and _single_letter_or_roman_numeral(before):
            return state
        if len(before) == 1 and before.isalpha() and before not in VOWELS:
            return state
        if after in OPENING_BRACKETS:
            after_brackets = self._token_after_brackets()
            if after_brackets in INNER_PUNCTUATION:
                return state
            if self._token_after_next().istitle():
                return TERMINAL
            return state if after_brackets[:1].islower() else TERMINAL
        return TERMINAL


def _single_letter_or_roman_numeral(token: str) -> bool:
    return len(token) == 1 or token in ROMAN_NUMERALS


def sentence_spans(line: str) -> list[tuple[int, int]]:
    """The sentences of one line (no line break inside) as (start, end) offsets, as syntok's `analyze` finds
    them: from a sentence's first token to the end of its last (which may be the line's trailing spacing)."""
    tokens = tokenize(line)
    offsets, values = tokens.offsets, tokens.values
    return [(offsets[first], offsets[stop - 1] + len(values[stop - 1]))
            for first, stop in _Segmenter(tokens).sentences()]
