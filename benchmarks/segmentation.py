"""Sentence splitters compared on hand-segmented text of the four kinds the platform sees.

Each gold text below was written and split by hand by the team. A splitter's output counts as right for a sentence
when it produces exactly that sentence (whitespace-trimmed). Speed is measured on a 26,000-word mixed text.

    pip install -e '.[bench]' && python -m benchmarks.segmentation
"""

import time

import blingfire
import pysbd
import syntok.segmenter as syntok

from benchmarks.segmentation_gold import GOLD


def split_blingfire(text: str) -> list[str]:
    _, offsets = blingfire.text_to_sentences_and_offsets(text)
    return [text[start:end].strip() for start, end in offsets]


PYSBD = pysbd.Segmenter(language="en", clean=False)


def split_pysbd(text: str) -> list[str]:
    return [s.strip() for s in PYSBD.segment(text) if s.strip()]


def split_syntok(text: str) -> list[str]:
    out = []
    for paragraph in syntok.analyze(text):
        for sentence in paragraph:
            tokens = list(sentence)
            start, end = tokens[0].offset, tokens[-1].offset + len(tokens[-1].value)
            out.append(text[start:end].strip())
    return out


SPLITTERS = {"blingfire": split_blingfire, "pysbd": split_pysbd, "syntok": split_syntok}


def main() -> None:
    mixed = " ".join(" ".join(sentences) for sentences in GOLD.values())
    big = " ".join([mixed] * 200)
    print(f"{'splitter':10} " + " ".join(f"{kind:>11}" for kind in GOLD) + "   words/s (26k-word text)")
    for name, split in SPLITTERS.items():
        cells = []
        for sentences in GOLD.values():
            predicted = set(split(" ".join(sentences)))
            cells.append(f"{sum(s in predicted for s in sentences)}/{len(sentences):<9}")
        started = time.perf_counter()
        split(big)
        seconds = time.perf_counter() - started
        print(f"{name:10} " + " ".join(f"{cell:>11}" for cell in cells) + f"   {len(big.split()) / seconds:,.0f}")


if __name__ == "__main__":
    main()
