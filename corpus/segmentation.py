"""Sentence segmentation: documents and summaries into numbered sentences, dialogues into speaker turns first.

Documents and summaries are split once, at import, and the result is stored: every later index refers to it.
Dialogues are split into speaker turns first, then each turn into sentences. Three ways of writing turns are known:
"NAME: ..." at the start of a line, DialogSum's "#Person1#: ..." (anywhere), and UniSumEval's release format, one
line of "<p>USER : ...</p> <p>SYSTEM : ...</p>" blocks; the markup and the labels stay in the stored text, never in a
sentence. Sentences are exact substrings of the
text (offsets from the splitter), so nothing is normalised away, and `<PHONENUMBER_1>`-style placeholders survive.

The splitting rules are syntok's (segtok v2): benchmarks/segmentation.py compares syntok with pysbd and Bling Fire
on hand-segmented news, scientific, dialogue and redacted text; syntok got every sentence right at ~100x pysbd's
speed (results in benchmarks/RESULTS.md). corpus/splitter.py runs the same rules ~9x faster than syntok's own code,
with the same sentences.
"""

import multiprocessing
import re
from array import array
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import NamedTuple

from .internals import children_allowed
from .splitter import sentence_spans

# Below this many characters to split, starting worker processes costs more than it saves.
PARALLEL_FROM_CHARS = 500_000

# A speaker's label: short, no sentence punctuation ("USER", "#Person1#", "Dr. Ana Ruiz").
LABEL = r"#?[A-Za-z][\w .'#-]{0,38}?#?"
# "NAME: ..." at the start of a line.
SPEAKER_LINE = re.compile(rf"^[ \t]*(?P<speaker>{LABEL})[ \t]*:[ \t]+(?=\S)", re.MULTILINE)
# DialogSum's "#Person1#: ...", wherever it stands: its turns may share a line.
DIALOGSUM_TAG = re.compile(r"(?<!\S)(?P<speaker>#[A-Za-z]\w{0,30}#)[ \t]*:[ \t]*")
# UniSumEval's release: one line of turns, each "<p>USER : ...</p>" (UniSumEval paper, appendix E).
RELEASE_TURN = re.compile(r"<p>(?P<body>.*?)</p>", re.DOTALL)
RELEASE_LABEL = re.compile(rf"\s*(?P<speaker>{LABEL})\s*:\s*")


class Sentence(NamedTuple):
    """A tuple, not a dataclass: an import's splitting workers send tens of thousands of them back, and a tuple
    pickles and unpickles with no attribute dictionary per sentence."""

    index: int
    text: str
    turn: int | None = None
    speaker: str = ""


@dataclass(frozen=True)
class Turn:
    """One speaker's turn: `text[start:end]` is what they said, without their label or the release's markup."""

    speaker: str
    start: int
    end: int


# Where `str.splitlines` ends a line.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def sentence_bounds(text: str) -> list[tuple[int, int]]:
    """Each sentence of `text` as (start, end) offsets into it, line by line (a line break always ends a sentence
    in our sources), without the spacing around it: the stored sentence is an exact substring, never re-spaced."""
    bounds = []
    position = 0  # where the line starts in `text`
    for line in text.splitlines(keepends=True):
        body = line.rstrip(LINE_BREAKS)
        if body.strip():
            for start, end in sentence_spans(body):
                while start < end and body[start].isspace():
                    start += 1
                while end > start and body[end - 1].isspace():
                    end -= 1
                if end > start:
                    bounds.append((position + start, position + end))
        position += len(line)
    return bounds


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences, line by line."""
    return [text[start:end] for start, end in sentence_bounds(text)]


def is_release_format(text: str) -> bool:
    """UniSumEval's dialogue release: the whole text is <p> blocks, and a block starts with a speaker's label."""
    stripped = text.strip()
    return (stripped.startswith("<p>") and stripped.endswith("</p>") and any(
        RELEASE_LABEL.match(text, *block.span("body")) for block in RELEASE_TURN.finditer(text)))


def _unlabelled(text: str, start: int, end: int) -> list[Turn]:
    """Text outside any turn (before the first label, between release blocks): a turn without a speaker, so that
    no word of the document is lost."""
    return [Turn("", start, end)] if text[start:end].strip() else []


def _release_turns(text: str) -> list[Turn]:
    turns, position = [], 0
    for block in RELEASE_TURN.finditer(text):
        turns += _unlabelled(text, position, block.start())
        start, end = block.span("body")
        label = RELEASE_LABEL.match(text, start, end)
        turns.append(Turn(label["speaker"].strip(), label.end(), end) if label else Turn("", start, end))
        position = block.end()
    return turns + _unlabelled(text, position, len(text))


def _line_turns(text: str) -> list[Turn]:
    """Turns that start at a "NAME:" line or at a DialogSum "#PersonN#:" tag; a line without a label continues the
    turn before it."""
    labels = {match.start("speaker"): (match.end(), match["speaker"].strip())
              for pattern in (DIALOGSUM_TAG, SPEAKER_LINE) for match in pattern.finditer(text)}
    starts = sorted(labels)
    turns = _unlabelled(text, 0, starts[0] if starts else len(text))
    for number, position in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(text)
        utterance_start, speaker = labels[position]
        turns.append(Turn(speaker, utterance_start, end))
    return turns


def dialogue_turns(text: str) -> list[Turn]:
    """A dialogue's turns in order, each an exact span of `text`: the release's <p> blocks, or "NAME:" lines and
    DialogSum tags. Turns with nothing said are left out."""
    turns = _release_turns(text) if is_release_format(text) else _line_turns(text)
    return [turn for turn in turns if text[turn.start:turn.end].strip()]


def split_turns(text: str) -> list[tuple[str, str]]:
    """A dialogue as (speaker, utterance) pairs; the utterance is the turn's text, stripped."""
    return [(turn.speaker, text[turn.start:turn.end].strip()) for turn in dialogue_turns(text)]


def segment_document(text: str, *, dialogue: bool) -> list[Sentence]:
    """The document's sentences, numbered from 0. A dialogue is split into turns first (each sentence keeps its turn
    and speaker); every sentence is an exact substring of `text`, the release's markup and the speakers' labels
    are in none."""
    kind = DIALOGUE if dialogue else DOCUMENT
    return _sentences(kind, text, _bounds(kind, text))


def segment_summary(text: str) -> list[str]:
    return split_sentences(text)


# What a text is split as: a document in prose, a dialogue (turns first), or a summary.
DOCUMENT, DIALOGUE, SUMMARY = "document", "dialogue", "summary"
# Texts go to the workers in batches of about this many characters: a 1x UniSumEval file makes about twenty.
BATCH_CHARS = 200_000


def split_as(kind: str, text: str) -> list[Sentence] | list[str]:
    return _sentences(kind, text, _bounds(kind, text))


def _bounds(kind: str, text: str) -> tuple[list[int], list[str]]:
    """Where `text`'s sentences are, as plain numbers: a flat list of (start, end), or for a dialogue of (start,
    end, turn), and a dialogue's speaker for each turn. What a splitting worker sends back: numbers pickle and
    unpickle several times faster than the sentences' strings and tuples."""
    if kind != DIALOGUE:
        return [offset for bounds in sentence_bounds(text) for offset in bounds], []
    flat, speakers = [], []
    for number, turn in enumerate(dialogue_turns(text)):
        speakers.append(turn.speaker)
        for start, end in sentence_bounds(text[turn.start:turn.end]):
            flat += (turn.start + start, turn.start + end, number)
    return flat, speakers


def _sentences(kind: str, text: str, found: tuple[list[int], list[str]]) -> list[Sentence] | list[str]:
    """The sentences `_bounds` found in `text`, as `split_as` gives them."""
    flat, speakers = found
    if kind == SUMMARY:
        return [text[start:end] for start, end in zip(flat[::2], flat[1::2])]
    if kind == DOCUMENT:
        return [Sentence(index, text[start:end]) for index, (start, end) in enumerate(zip(flat[::2], flat[1::2]))]
    return [Sentence(index, text[start:end], turn, speakers[turn])
            for index, (start, end, turn) in enumerate(zip(flat[::3], flat[1::3], flat[2::3]))]


def sentences_from_bounds(kind: str, text: str, found: tuple) -> list[Sentence] | list[str]:
    """The sentences `Splitter.bounds` found in `text`."""
    return _sentences(kind, text, found)


def _split_batch(batch: list[tuple[str, str]]) -> list:
    # The bounds travel back as arrays: 8 bytes a number in the parent (a list of integers takes 40 until the
    # import has written them), and pickled as one block.
    return [(array("q", flat), speakers) for flat, speakers in (_bounds(kind, text) for kind, text in batch)]


class Splitter:
    """Splits an import's texts, in worker processes when there is enough text, while the caller goes on.

    An import offers each text as it reads it (`offer`), before the file is checked: the workers split while the
    rest of the file is read and checked, which is most of an import's time besides the splitting. `sentences`
    then gives a text's sentences, waiting for its batch if need be. A text is split once however many rows
    repeat it, and a text never offered is split when asked for.

    The workers are forks of this process (an import runs in a Celery worker, single-threaded): they run only the
    splitter, never touch the inherited database connection, and leave through `os._exit`, which closes nothing
    of the parent's. A spawned worker would instead import the parent's main script again. Use it as a context
    manager: leaving drops what is still queued (a file with errors is not split to the end)."""

    def __init__(self, processes: int, expected_chars: int):
        parallel = processes > 1 and expected_chars >= PARALLEL_FROM_CHARS
        self.pool = ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("fork")) \
            if parallel else None
        # An import runs in a Celery worker's daemonic child: its workers are joined on leaving, so it may start them.
        self.children = ExitStack()
        self.children.enter_context(children_allowed(parallel))
        self.batch: list[tuple[str, str]] = []
        self.batch_chars = 0
        self.results: dict[tuple[str, str], tuple] = {}  # (kind, text) -> (future, position in its batch)

    def __enter__(self) -> "Splitter":
        return self

    def __exit__(self, *exc_info) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        self.results = {}  # the texts and what the workers sent back, let go with the splitter
        self.children.close()

    def offer(self, kind: str, text: str) -> None:
        """Queue `text` for splitting as `kind` (when there are workers; otherwise it waits to be asked for)."""
        if self.pool is None or (kind, text) in self.results:
            return
        self.results[(kind, text)] = (None, len(self.batch))
        self.batch.append((kind, text))
        self.batch_chars += len(text)
        if self.batch_chars >= BATCH_CHARS:
            self.send()

    def send(self) -> None:
        """Send the queued texts to the workers now."""
        if not self.batch:
            return
        future = self.pool.submit(_split_batch, self.batch)
        for position, key in enumerate(self.batch):
            self.results[key] = (future, position)
        self.batch, self.batch_chars = [], 0

    def sentences(self, kind: str, text: str) -> list:
        return _sentences(kind, text, self._found(kind, text))

    def bounds(self, kind: str, text: str) -> tuple[array, list[str]]:
        """Where `text`'s sentences are, in 8 bytes a number (a list of Python integers takes 40): for an import
        that makes the sentences later, a few documents at a time (`sentences_from_bounds`)."""
        flat, speakers = self._found(kind, text)
        return (flat if isinstance(flat, array) else array("q", flat)), speakers

    def _found(self, kind: str, text: str) -> tuple[list[int] | array, list[str]]:
        entry = self.results.get((kind, text))
        if entry is None:
            return _bounds(kind, text)
        future, position = entry
        if future is None:
            self.send()
            future, position = self.results[(kind, text)]
        return future.result()[position]
