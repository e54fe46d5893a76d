"""The offline pre-labeler on hand-written sentences with planted errors: balanced accuracy of "has an error",
similarity alone (the first offline labeler) against the rule-based checks and against the checks weighed with the
verifier.

    python -m benchmarks.offline_judge [--set dev|eval|tune2..tune5|train1..train58|both|tuning|calibration|
                                              blind|blind2|...|blind10|blind8-10] [--threshold 0.55] [--demo]
                                              [--show]

The sets (benchmarks/data/offline_judge_*.jsonl, one document a line) were written for this benchmark, in several
domains, each sentence labeled with the error planted in it (or "no_error" for faithful paraphrases, fused
sentences and derived facts). The tuning sets: dev, eval (held out once, seen since), tune2 (name swaps, role
reversals, number swaps and unsupported claims) and tune3-tune5 (written by three people who had not read the
checks; the v4 thresholds were chosen on all six), and train1-train58 (more such writers; those of train43-train58
planted twice as many relation errors; the verifier was trained on the others, and its weighing with the checks
fitted on train9, train10, train15-train18 and train27-train42, `--set calibration`, benchmarks/fit_weighing.py).
The blind sets were written by someone who never saw the checks; they are reported apart from the tuning sets, and
their sentences are never printed (`--show` is refused for them), so that nobody tunes on them. `--set both` is dev
and eval, `--set tuning` every tuning set. Where a run takes several sets, the sentences of all of them are also
counted together, with a 95% interval from resampling whole documents (a document's sentences share its writer and
its wording, so they are not independent draws).
Documents are segmented as the import does (corpus.segmentation), sentences embedded with the configured model.
`--demo` also counts how many sentences of the demo dataset (annotation/demo/demo.jsonl) each labeler flags, and
how many of the demo's planted errors (listed below by hand, never used for tuning) it catches.
"""

import argparse
import json
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
CATEGORIES = ("no_error", "out_of_article", "entity", "relation", "sentence")
ERRORS = CATEGORIES[1:]
TUNING = ["dev", "eval", "tune2", "tune3", "tune4", "tune5", *(f"train{n}" for n in range(1, 59))]
# Kept out of the verifier's training: they fit the weighing of its score with the checks (benchmarks/fit_weighing.py).
# The writers of all but the first two were asked to keep some faithful sentences close to the document's wording and
# to reword some errors.
CALIBRATION = ["train9", "train10", *(f"train{n}" for n in range(15, 19)), *(f"train{n}" for n in range(27, 43))]
SETS = {**{name: [name] for name in TUNING}, "both": ["dev", "eval"], "tuning": TUNING,
        "calibration": CALIBRATION,
        "blind": ["blind"], "blind2": ["blind2"], "blind3": ["blind3"], "blind4": ["blind4"], "blind5": ["blind5"],
        "blind6": ["blind6"], "blind7": ["blind7"], "blind8": ["blind8"], "blind9": ["blind9"],
        "blind10": ["blind10"], "blind8-10": ["blind8", "blind9", "blind10"]}
# Written by people who had not seen the labeler; never printed, never tuned on. Each was run once and is spent since:
# "blind" against the v3 checks, "blind2" against v4, "blind3" against the verifier (v5) and the checks (v4.1),
# "blind4" against v6 (the checks and the verifier together) and v4.1, "blind5" against v7 (weighed), v6, v4.2 and v4.1,
# "blind6" against v8 (two verifiers, weighed by trees), v7 and v4.2, "blind7" against v8, "blind8" to "blind10"
# together (`--set blind8-10`, the sentences pooled) against v9 (three verifiers), v8 and v4.2.
HELD_OUT = {"blind", "blind2", "blind3", "blind4", "blind5", "blind6", "blind7", "blind8", "blind9", "blind10"}
# Resampling the documents of pooled sets for a 95% interval of the balanced accuracy.
DRAWS = 5000
SEED = 20261130


def load(name: str) -> list[dict]:
    path = DATA / f"offline_judge_{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def source_of(document: dict) -> tuple[list[str], list[str]]:
    """The document's sentences as the import segments them, and who says each ("" in prose)."""
    from corpus.segmentation import segment_document

    segmented = segment_document(document["document"], dialogue=document["input_type"] == "dialogue")
    return [s.text for s in segmented], [s.speaker or "" for s in segmented]


def findings_of(backend, document: dict) -> tuple[list, list[str]]:
    """The labeler's findings for each of the document's sentences (in one call, as calibration computes them), and
    the document's speakers."""
    source, speakers = source_of(document)
    texts = [sentence for _, sentence in document["sentences"]]
    return backend.findings(source, texts, backend.encode(source), backend.encode(texts), speakers=speakers), speakers


def judged(backend, documents: list[dict]) -> list[tuple[str, str, str, str]]:
    """(planted category, predicted category, sentence, reason) for every sentence of every document."""
    rows = []
    for document in documents:
        source, speakers = source_of(document)
        for planted, sentence in document["sentences"]:
            # One sentence at a time: a judgment must not depend on the other sentences of its summary.
            [judgement] = backend.label_summary(source, [sentence], speakers=speakers)
            rows.append((planted, judgement.category, sentence, judgement.reason))
    return rows


def points(backend, documents: list[dict]):
    """assist.calibration.Point per sentence: what calibrate_offline computes from a project's labels."""
    from assist.calibration import Point

    result = []
    for document in documents:
        found, _ = findings_of(backend, document)
        result += [Point(f.score, f.content_flag, planted != "no_error")
                   for f, (planted, _) in zip(found, document["sentences"])]
    return result


def balanced_accuracy(pairs) -> tuple[float, float, float]:
    """(balanced accuracy, true positive rate, true negative rate) of "has an error"."""
    positives = [predicted for truth, predicted in pairs if truth]
    negatives = [predicted for truth, predicted in pairs if not truth]
    tpr = sum(positives) / len(positives) if positives else float("nan")
    tnr = sum(not p for p in negatives) / len(negatives) if negatives else float("nan")
    return (tpr + tnr) / 2, tpr, tnr


def report(rows) -> dict:
    pairs = [(planted != "no_error", predicted != "no_error") for planted, predicted, _, _ in rows]
    accuracy, tpr, tnr = balanced_accuracy(pairs)
    flagged = Counter(planted for planted, predicted, _, _ in rows if predicted != "no_error")
    total = Counter(planted for planted, *_ in rows)
    errors = [(planted, predicted) for planted, predicted, _, _ in rows if planted != "no_error"]
    return {
        "sentences": len(rows), "errors": len(errors), "balanced_accuracy": accuracy, "tpr": tpr, "tnr": tnr,
        "flagged_by_category": {c: f"{flagged[c]}/{total[c]}" for c in CATEGORIES if total[c]},
        # Recall of each error category: the share of its planted sentences flagged with any error.
        "recall_by_category": {c: flagged[c] / total[c] for c in ERRORS if total[c]},
        "right_category": sum(planted == predicted for planted, predicted in errors),
    }


def by_category(result: dict) -> tuple[str, str]:
    """A report's recall per error category and flagged per planted category, as the tables print them."""
    return (", ".join(f"{c} {v:.2f}" for c, v in result["recall_by_category"].items()),
            ", ".join(f"{c} {v}" for c, v in result["flagged_by_category"].items()))


def interval(documents_rows: list[list[tuple]], draws: int = DRAWS) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the balanced accuracy over documents drawn with replacement."""
    import numpy as np

    counts = np.array([[sum(planted != "no_error" for planted, *_ in rows),
                        sum(planted != "no_error" and predicted != "no_error" for planted, predicted, *_ in rows),
                        sum(planted == "no_error" for planted, *_ in rows),
                        sum(planted == "no_error" and predicted == "no_error" for planted, predicted, *_ in rows)]
                       for rows in documents_rows], dtype=float)
    drawn = np.random.default_rng(SEED).integers(0, len(counts), size=(draws, len(counts)))
    errors, caught, faithful, passed = counts[drawn].sum(axis=1).T
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = (caught / errors + passed / faithful) / 2
    low, high = np.nanpercentile(accuracy, [2.5, 97.5])
    return float(low), float(high)


# The demo's planted errors, found by reading annotation/demo/demo.jsonl against its documents: (uid, model,
# sentence index). They are counted, never tuned on.
DEMO_PLANTED: set[tuple[str, str, int]] = {
    ("demo-news-001", "llama-3-8b", 1), ("demo-news-001", "llama-3-8b", 2), ("demo-news-001", "llama-3-8b", 3),
    ("demo-news-001", "bart-large", 1), ("demo-news-001", "bart-large", 3),
    ("demo-news-002", "gpt-4o", 2), ("demo-news-002", "llama-3-8b", 1), ("demo-news-002", "llama-3-8b", 3),
    ("demo-news-002", "bart-large", 3), ("demo-news-002", "bart-large", 4),
    ("demo-medical-001", "llama-3-8b", 0), ("demo-medical-001", "llama-3-8b", 1),
    ("demo-medical-001", "bart-large", 2), ("demo-medical-001", "bart-large", 3),
    ("demo-medical-001", "bart-large", 4),
    ("demo-booking-001", "llama-3-8b", 0), ("demo-booking-001", "llama-3-8b", 2),
    ("demo-booking-001", "bart-large", 3), ("demo-booking-001", "bart-large", 4),
    ("demo-booking-001", "bart-large", 5),
    ("demo-meeting-001", "gpt-4o", 4), ("demo-meeting-001", "llama-3-8b", 2), ("demo-meeting-001", "llama-3-8b", 3),
    ("demo-meeting-001", "bart-large", 3), ("demo-meeting-001", "bart-large", 4),
    ("demo-meeting-001", "bart-large", 5),
    ("demo-interview-001", "llama-3-8b", 1), ("demo-interview-001", "llama-3-8b", 3),
    ("demo-interview-001", "bart-large", 3), ("demo-interview-001", "bart-large", 4),
}


def demo_rows(backend) -> list[tuple[tuple[str, str, int], str, str]]:
    from corpus.segmentation import segment_summary

    rows = []
    for line in (ROOT / "annotation" / "demo" / "demo.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        source, speakers = source_of(row)
        for index, sentence in enumerate(row.get("sentences") or segment_summary(row["summary"])):
            [judgement] = backend.label_summary(source, [sentence], speakers=speakers)
            rows.append(((row["uid"], row["model"], index), judgement.category, sentence))
    return rows


def main() -> None:
    import time

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=tuple(SETS), default="eval")
    parser.add_argument("--threshold", type=float, default=None, help="default: FINEGRAIN_OFFLINE_THRESHOLD")
    parser.add_argument("--demo", action="store_true", help="also count the demo dataset's flagged sentences")
    parser.add_argument("--show", action="store_true", help="print every sentence with its judgment (not for blind)")
    args = parser.parse_args()
    names = SETS[args.set]
    if args.show and HELD_OUT & set(names):
        parser.error("--show prints the sentences; the blind set is measured, never read")

    from assist.config import DEFAULT_OFFLINE_THRESHOLD, VERIFIER_OFFLINE_THRESHOLD, backend_config
    from assist.llm import offline_verifier, offline_weighing
    from assist.llm.offline import OfflineSimilarityBackend

    config = backend_config()
    # Each labeler at the similarity threshold its other thresholds were chosen with, unless --threshold says.
    checks = DEFAULT_OFFLINE_THRESHOLD if args.threshold is None else args.threshold
    verified = VERIFIER_OFFLINE_THRESHOLD if args.threshold is None else args.threshold
    model = config.embedding_model or None
    backends = {
        "similarity only (v1)": OfflineSimilarityBackend(threshold=checks, model_path=model, checks=False),
        "similarity + checks + probes (v4.2)": OfflineSimilarityBackend(threshold=checks, model_path=model),
        "checks + probes + verifier, weighed (v9)": OfflineSimilarityBackend(threshold=verified, model_path=model,
                                                                    verifier=offline_verifier.shared()),
    }
    print(f"threshold {checks:.2f} (v9: {verified:.2f}), model {backends['similarity only (v1)'].model}; the "
          f"verifier was trained on {', '.join(offline_verifier.shared().meta['sets'])} and the weighing fitted on "
          f"{', '.join(offline_weighing.shipped().sets)}, so v9 on those sets is measured in-sample")
    # The model's first load would otherwise be counted in the first document's time.
    for backend in backends.values():
        backend.label_summary(["A sentence."], ["A sentence."])
    by_document = {label: [] for label in backends}  # Each labeler's rows, one list per document of every set.
    for name in names:
        documents = load(name)
        domains = sorted({d["domain"] for d in documents})
        kind = "held out, written blind" if name in HELD_OUT else "tuning"
        print(f"\n{name} set ({kind}): {len(documents)} documents ({', '.join(domains)})")
        print("| labeler | sentences | errors | balanced accuracy | TPR | TNR | recall per error category "
              "| flagged per planted category | right category | s per document |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for label, backend in backends.items():
            started = time.perf_counter()
            per_document_rows = [judged(backend, [document]) for document in documents]
            per_document = (time.perf_counter() - started) / len(documents)
            by_document[label] += per_document_rows
            rows = [row for document_rows in per_document_rows for row in document_rows]
            result = report(rows)
            recall, per_category = by_category(result)
            print(f"| {label} | {result['sentences']} | {result['errors']} | {result['balanced_accuracy']:.3f} "
                  f"| {result['tpr']:.3f} | {result['tnr']:.3f} | {recall} | {per_category} "
                  f"| {result['right_category']}/{result['errors']} | {per_document:.2f} |")
            if args.show:
                for planted, predicted, sentence, reason in rows:
                    mark = "ok " if (planted == "no_error") == (predicted == "no_error") else "XX "
                    print(f"   {mark}{planted:>14} -> {predicted:<14} {sentence}\n{'':22}{reason}")
    if len(names) > 1:
        print(f"\nall {len(names)} sets pooled ({', '.join(names)}); 95% interval from {DRAWS} resamplings of the "
              f"{len(by_document[next(iter(backends))])} documents")
        print("| labeler | sentences | errors | balanced accuracy | 95% interval | TPR | TNR "
              "| recall per error category | flagged per planted category |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for label, documents_rows in by_document.items():
            result = report([row for rows in documents_rows for row in rows])
            low, high = interval(documents_rows)
            recall, per_category = by_category(result)
            print(f"| {label} | {result['sentences']} | {result['errors']} | {result['balanced_accuracy']:.3f} "
                  f"| {low:.3f}-{high:.3f} | {result['tpr']:.3f} | {result['tnr']:.3f} | {recall} | {per_category} |")
    if args.set in ("both", "tuning"):
        from assist.calibration import balanced_accuracy as at_threshold
        from assist.calibration import choose_threshold

        print("\nthreshold calibrated on the dev set (assist.calibration, as calibrate_offline does), "
              "measured on the eval set")
        for label, backend in backends.items():
            chosen = choose_threshold(points(backend, load("dev")), default=backend.threshold)
            print(f"- {label}: threshold {chosen.threshold:.2f} (dev balanced accuracy "
                  f"{chosen.balanced_accuracy:.3f}); eval balanced accuracy "
                  f"{at_threshold(points(backend, load('eval')), chosen.threshold):.3f}")
    if args.demo:
        print("\ndemo dataset (annotation/demo/demo.jsonl)")
        for label, backend in backends.items():
            rows = demo_rows(backend)
            flagged = {key for key, category, _ in rows if category != "no_error"}
            caught = len(flagged & DEMO_PLANTED)
            print(f"- {label}: {len(flagged)} of {len(rows)} sentences flagged; {caught} of {len(DEMO_PLANTED)} "
                  f"planted errors caught; {len(flagged - DEMO_PLANTED)} faithful sentences flagged")
            if args.show:
                for key, category, sentence in rows:
                    print(f"   {'P' if key in DEMO_PLANTED else ' '} {category:<14} {key} {sentence}")


if __name__ == "__main__":
    main()
