"""Sentence splitters compared on hand-segmented text of the four kinds the platform sees.

Each gold text below was written and split by hand by the team. A splitter's output counts as right for a sentence
when it produces exactly that sentence (whitespace-trimmed). Speed is measured on a 26,000-word mixed text.
"finegrain" is corpus/splitter.py, syntok's rules run faster; with --file it is compared with syntok itself on every
line of an import file (its distinct documents and its summaries): the same sentences, and CPU time side by side.

    pip install -e '.[bench]' && python -m benchmarks.segmentation [--file benchmarks/out/scale-1x.jsonl]
"""

import argparse
import json
import time

import blingfire
import pysbd
import syntok.segmenter as syntok

from benchmarks.segmentation_gold import GOLD
from corpus.segmentation import split_sentences


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


SPLITTERS = {"blingfire": split_blingfire, "pysbd": split_pysbd, "syntok": split_syntok,
             "finegrain": split_sentences}


def compare_on_file(path: str) -> None:
    """syntok and finegrain's splitter on every non-empty line of an import file's distinct texts."""
    texts = {}
    with open(path, encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            texts.setdefault(row["document"], None)
            texts.setdefault(row["summary"], None)
    lines = [line for text in texts for line in text.splitlines() if line.strip()]
    outputs: dict[str, list] = {}
    seconds: dict[str, list[float]] = {"syntok": [], "finegrain": []}
    for _ in range(2):  # twice each, alternating
        for name, times in seconds.items():
            started = time.process_time()
            outputs[name] = [SPLITTERS[name](line) for line in lines]
            times.append(time.process_time() - started)
    differing = sum(a != b for a, b in zip(outputs["syntok"], outputs["finegrain"], strict=True))
    sentences = sum(map(len, outputs["syntok"]))
    words = sum(len(line.split()) for line in lines)
    print(f"{path}: {len(lines):,} lines, {words:,} words, {sentences:,} sentences (syntok); lines split "
          f"differently: {differing}")
    for name, times in seconds.items():
        print(f"  {name:10} CPU seconds {' and '.join(f'{t:.2f}' for t in times)}")
    print(f"  syntok / finegrain: {min(seconds['syntok']) / min(seconds['finegrain']):.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", help="an import file (JSON lines with document and summary)")
    if (path := parser.parse_args().file):
        compare_on_file(path)
        return
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
