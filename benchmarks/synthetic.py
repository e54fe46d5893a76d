"""A deterministic UniSumEval-scale synthetic dataset (the UniSumEval numbers, paper 3.2 and 3.5).

225 documents (9 domains x 25; 4 dialogue domains; 21 to 10,462 words, mean about 2,100), 9 summarizers each
(2,025 summaries, about 8,100 summary sentences), about 12 candidate key-facts per document. The text is random
but shaped like the real thing: sentences of 8-30 words with names, numbers and abbreviations, dialogue turns,
and redacted placeholders in one domain.

    python -m benchmarks.synthetic --out benchmarks/out/unisumeval-scale.jsonl [--seed 7] [--scale 1.0]
"""

import argparse
import json
import random
from pathlib import Path

DOMAINS = [
    # (domain, source, dialogue, redacted, mean words)
    ("lifestyle", "SynthHow", False, False, 600),
    ("news", "SynthNews", False, False, 700),
    ("report", "SynthGov", False, False, 5200),
    ("medical literature", "SynthMed", False, False, 3000),
    ("science fiction", "SynthFiction", False, False, 5000),
    ("booking", "SynthBooking", True, True, 250),
    ("daily life", "SynthDaily", True, False, 180),
    ("interview", "SynthInterview", True, False, 1500),
    ("meeting", "SynthMeeting", True, False, 2300),
]
SUMMARIZERS = ["bart-large", "flan-t5-large", "mistral-7b", "phi-2", "llama-2-13b", "mixtral-8x7b",
               "llama-3-70b", "gpt-4", "claude-3-opus"]
WORDS = ("council harbor budget study patients dose trial ferry bridge meeting vote report committee library school "
         "station train table market river energy water policy data model results method sample growth rate "
         "schedule contract vendor district survey community project funding hospital clinic weather road").split()
NAMES = ["Ines Okafor", "Tomas Berg", "Dr. Lena Watts", "Mr. Ravi Kohli", "Ms. Ada Nunez", "Prof. K. Imai"]
SPEAKERS = ["USER", "SYSTEM", "Anna", "Ben", "#Person1#", "#Person2#", "HOST", "GUEST"]
PLACEHOLDERS = ["<PLACE_1>", "<TIME_1>", "<DAY_1>", "<PHONENUMBER_1>", "<CODE_1>", "<ADDRESS_1>", "<TIME_2>"]


def sentence(rng: random.Random, redacted: bool) -> str:
    words = rng.choices(WORDS, k=rng.randint(6, 26))
    if rng.random() < 0.4:
        words.insert(rng.randrange(len(words)), rng.choice(NAMES))
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), f"{rng.randint(1, 99)}.{rng.randint(0, 9)}%")
    if redacted and rng.random() < 0.5:
        words.insert(rng.randrange(len(words)), rng.choice(PLACEHOLDERS))
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice([".", ".", ".", "?", "!"])


def document(rng: random.Random, target_words: int, dialogue: bool, redacted: bool) -> str:
    lines, words = [], 0
    while words < target_words:
        if dialogue:
            line = f"{rng.choice(SPEAKERS)}: " + " ".join(sentence(rng, redacted) for _ in range(rng.randint(1, 3)))
        else:
            line = " ".join(sentence(rng, redacted) for _ in range(rng.randint(2, 6)))
        lines.append(line)
        words += len(line.split())
    return "\n".join(lines)


def word_target(rng: random.Random, mean: int, index: int) -> int:
    # One shortest and one longest document, as in the paper's range (21 to 10,462 words).
    if index == 0 and mean < 300:
        return 1
    if index == 0 and mean > 5000:
        return 10_462
    return max(25, int(rng.lognormvariate(0, 0.35) * mean))


def rows(seed: int = 7, scale: float = 1.0):
    rng = random.Random(seed)
    per_domain = max(1, round(25 * scale))
    for domain, source, dialogue, redacted, mean in DOMAINS:
        for index in range(per_domain):
            text = document(rng, word_target(rng, mean, index), dialogue, redacted)
            uid = f"{source.lower()}-{index:03d}"
            reference = " ".join(sentence(rng, redacted) for _ in range(3))
            keyfacts = [sentence(rng, redacted)[:80].rstrip(" ,") + "." for _ in range(rng.randint(9, 15))]
            for model in SUMMARIZERS:
                summary = " ".join(sentence(rng, redacted) for _ in range(rng.randint(2, 6)))
                yield {
                    "uid": uid, "doc_id": f"{index:03d}", "source": source, "domain": domain,
                    "input_type": "dialogue" if dialogue else "non-dialogue",
                    "redact_type": "redacted" if redacted else "non-redacted", "model": model,
                    "reference": reference, "document": text, "summary": summary,
                    "pred_keyfact": keyfacts,
                }


def write(path: Path, seed: int = 7, scale: float = 1.0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for row in rows(seed, scale):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/unisumeval-scale.jsonl"))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scale", type=float, default=1.0, help="documents per domain = 25 x scale")
    args = parser.parse_args()
    print(write(args.out, args.seed, args.scale))


if __name__ == "__main__":
    main()
