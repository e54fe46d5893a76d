"""Sentence segmentation: documents and summaries into numbered sentences, dialogues into speaker turns first.

Documents and summaries are split once, at import, and the result is stored: every later index refers to it.
Dialogues are split into speaker turns first, then each turn into sentences. Sentences are exact substrings of the
text (offsets from the splitter), so nothing is normalised away, and `<PHONENUMBER_1>`-style placeholders survive.

The splitter is syntok (segtok v2): benchmarks/segmentation.py compares it with pysbd and Bling Fire on
hand-segmented news, scientific, dialogue and redacted text; syntok got every sentence right at ~100x pysbd's speed
(results in benchmarks/RESULTS.md).
"""

import re
from dataclasses import dataclass

import syntok.segmenter as syntok

# "USER: ...", "#Person1#: ...", "Dr. Ana Ruiz: ...": a short label without sentence punctuation, then a colon.
SPEAKER_LINE = re.compile(r"^\s*(?P<speaker>#?[A-Za-z][\w .'#-]{0,38}?#?)\s*:\s+(?P<rest>\S.*)$")


@dataclass(frozen=True)
class Sentence:
    index: int
    text: str
    turn: int | None = None
    speaker: str = ""


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences, line by line (a line break always ends a sentence in our sources)."""
    sentences = []
    for line in text.splitlines():
        if not line.strip():
            continue
        for paragraph in syntok.analyze(line):
            for tokens in paragraph:
                # Offsets into the original line: the stored sentence is an exact substring, never re-spaced.
                start = tokens[0].offset
                end = tokens[-1].offset + len(tokens[-1].value)
                piece = line[start:end].strip()
                if piece:
                    sentences.append(piece)
    return sentences


def split_turns(text: str) -> list[tuple[str, str]]:
    """Split a dialogue into (speaker, utterance) turns; lines without a speaker continue the previous turn."""
    turns: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = SPEAKER_LINE.match(line)
        if match:
            turns.append([match["speaker"].strip(), match["rest"].strip()])
        elif turns:
            turns[-1][1] += "\n" + line.strip()
        else:
            turns.append(["", line.strip()])
    return [(speaker, utterance) for speaker, utterance in turns]


def segment_document(text: str, *, dialogue: bool) -> list[Sentence]:
    if not dialogue:
        return [Sentence(index=i, text=s) for i, s in enumerate(split_sentences(text))]
    sentences: list[Sentence] = []
    for turn, (speaker, utterance) in enumerate(split_turns(text)):
        for piece in split_sentences(utterance):
            sentences.append(Sentence(index=len(sentences), text=piece, turn=turn, speaker=speaker))
    return sentences


def segment_summary(text: str) -> list[str]:
    return split_sentences(text)
