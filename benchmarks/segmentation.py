"""Sentence splitters compared on hand-segmented text of the four kinds the platform sees.

Each gold text below was written and split by hand by the team. A splitter's output counts as right for a sentence
when it produces exactly that sentence (whitespace-trimmed). Speed is measured on a 26,000-word mixed text.

    pip install -e '.[bench]' && python -m benchmarks.segmentation
"""

import time

import blingfire
import pysbd
import syntok.segmenter as syntok

GOLD = {
    "news": [
        "Dr. Maria Lund arrived in St. Petersburg at 3 p.m. on Jan. 5.",
        "The U.S. economy grew 2.5% in the third quarter, the Fed said on Tuesday.",
        "\"We are not done yet,\" Mr. Ortega told reporters.",
        "Shares of Acme Inc. fell 4.1 percent.",
        "Ms. Wu, who joined in 2019, will lead the U.K. team.",
    ],
    "scientific": [
        "Patients (n = 42) received 5.5 mg/kg of drug X, i.e. a low dose.",
        "Results were significant (p < 0.05; see Fig. 2).",
        "Earlier work by Chen et al. reported similar effects.",
        "We used standard tools, e.g. logistic regression and t-tests.",
        "The mean age was 61.3 years (SD 8.2).",
    ],
    "dialogue": [
        "Sure, I can help with that.",
        "What day would you like to travel?",
        "Tuesday works... or maybe Wednesday.",
        "OK!",
        "Is there anything else?",
        "No, that's all, thanks.",
    ],
    "redacted": [
        "The train <CODE_1> leaves from <PLACE_1> at <TIME_1>.",
        "Call <PHONENUMBER_1> to change the booking.",
        "Your reference is <CODE_2>.",
        "The hotel is at <ADDRESS_1>, near <PLACE_2>.",
        "See you on <DAY_1>!",
    ],
}


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
