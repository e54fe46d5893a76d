"""Fit the offline labeler's weighing (assist/llm/offline_weighing.py) on the calibration sets and write it.

    python -m benchmarks.fit_weighing [--sets train9,...] [--out assist/llm/verifier/weighing.json]

For every sentence of the sets, the labeler's findings (the checks, the best cosine and the shipped verifier's score,
at the similarity threshold the verifier runs with) become one row of FEATURES; scikit-learn's gradient-boosted trees,
monotonic in the evidence of an error (offline_weighing.INCREASING), with both classes weighed equally (as balanced
accuracy counts them), are fitted and written as plain nodes. The sets must be ones that trained
neither the verifier nor the checks (benchmarks/offline_judge.CALIBRATION). Before fitting on all of them, each set
is left out in turn and predicted by weights fitted on the others, and the balanced accuracy of that, beside the rule
it replaces (flagged by any check or by a verifier score above 0.6), is printed and stored: the estimate of how the
weighing does on sentences it was not fitted on.
"""

import argparse
import json
import os
from pathlib import Path

import numpy as np

from benchmarks.offline_judge import CALIBRATION, DATA, HELD_OUT, balanced_accuracy, findings_of, load

ROOT = Path(__file__).resolve().parent.parent
# The rule the weighing replaced: a sentence was flagged by any check or by a verifier score above this.
EARLIER_VERIFIER_THRESHOLD = 0.6
# Small trees, few enough not to learn one writer's habits: the settings first tried, not tuned (RESULTS.md).
TREES = {"max_depth": 3, "learning_rate": 0.05, "max_iter": 200}
SEED = 20261129


def rows(backend, names: list[str]) -> list[dict]:
    """One row per sentence: its set, the FEATURES values, whether an error was planted, and the earlier rule's call."""
    from assist.llm.offline_weighing import features

    out = []
    for name in names:
        for document in load(name):
            found, speakers = findings_of(backend, document)
            for f, (planted, _) in zip(found, document["sentences"]):
                earlier = f.score < backend.threshold or f.checks_flag or f.verifier > EARLIER_VERIFIER_THRESHOLD
                out.append({"set": name, "x": features(f, any(speakers)), "error": planted != "no_error",
                            "low": f.score < backend.threshold, "earlier": earlier})
    return out


def fit(data: list[dict]):
    from sklearn.ensemble import HistGradientBoostingClassifier

    from assist.llm.offline_weighing import FEATURES, INCREASING

    model = HistGradientBoostingClassifier(**TREES, class_weight="balanced", random_state=SEED,
                                           monotonic_cst=[int(name in INCREASING) for name in FEATURES])
    return model.fit(np.array([row["x"] for row in data]), np.array([row["error"] for row in data]))


def weighing_of(model):
    """The fitted trees as offline_weighing.Weighing reads them. scikit-learn keeps them in private attributes
    (`_predictors`, `_baseline_prediction`); a test checks that the walk gives predict_proba's figures."""
    from assist.llm.offline_weighing import Weighing

    trees = []
    for [predictor] in model._predictors:
        trees.append(tuple((-1 if node["is_leaf"] else int(node["feature_idx"]), float(node["num_threshold"]),
                            int(node["left"]), int(node["right"]), float(node["value"]))
                           for node in predictor.nodes))
    return Weighing(float(np.ravel(model._baseline_prediction)[0]), tuple(trees))


def flagged(model, data: list[dict]) -> list[bool]:
    """As the labeler decides: below the similarity threshold, or weighed above one half."""
    from assist.llm.offline import WEIGHED_CUT

    weighing = weighing_of(model)
    return [row["low"] or weighing.probability_of(row["x"]) > WEIGHED_CUT for row in data]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(CALIBRATION))
    parser.add_argument("--out", default=str(ROOT / "assist" / "llm" / "verifier" / "weighing.json"))
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from assist.config import VERIFIER_OFFLINE_THRESHOLD
    from assist.llm import offline_verifier
    from assist.llm.offline import OfflineSimilarityBackend
    from assist.llm.offline_weighing import FEATURES, INCREASING, Weighing

    names = [name for name in args.sets.split(",") if name]
    unknown = sorted(name for name in names if not (DATA / f"offline_judge_{name}.jsonl").is_file())
    if unknown:
        parser.error(f"no such set in {DATA}: {', '.join(unknown)}")
    verifier = offline_verifier.shared()
    trained = sorted((set(names) & set(verifier.meta["sets"])) | (set(names) & HELD_OUT))
    if trained:
        parser.error(f"these sets trained the verifier or are held out: {', '.join(trained)}")
    # The features do not depend on the weights: any weighing lets the labeler run.
    backend = OfflineSimilarityBackend(threshold=VERIFIER_OFFLINE_THRESHOLD, verifier=verifier,
                                       weighing=Weighing(0.0, ()))
    data = rows(backend, names)
    left_out = {}
    print("| set left out | sentences | any check or verifier > 0.6 | weighed (fitted on the others) |")
    print("| --- | --- | --- | --- |")
    for name in names:
        inside = [row for row in data if row["set"] != name]
        outside = [row for row in data if row["set"] == name]
        earlier = balanced_accuracy([(row["error"], row["earlier"]) for row in outside])[0]
        weighed = balanced_accuracy(list(zip([row["error"] for row in outside], flagged(fit(inside), outside))))[0]
        left_out[name] = {"earlier_rule": round(earlier, 4), "weighed": round(weighed, 4)}
        print(f"| {name} | {len(outside)} | {earlier:.3f} | {weighed:.3f} |")
    mean = {key: round(float(np.mean([v[key] for v in left_out.values()])), 4) for key in ("earlier_rule", "weighed")}
    print(f"| mean | {len(data)} | {mean['earlier_rule']:.3f} | {mean['weighed']:.3f} |")
    weighing = weighing_of(fit(data))
    stored = {
        "features": list(FEATURES), "baseline": weighing.baseline,
        "trees": [[list(node) for node in nodes] for nodes in weighing.trees], "sets": names, "sentences": len(data),
        "errors": sum(row["error"] for row in data), "similarity_threshold": VERIFIER_OFFLINE_THRESHOLD,
        "trees_settings": TREES, "increasing": list(INCREASING), "class_weight": "balanced", "left_out": left_out,
        "left_out_mean": mean,
    }
    # One tree per line: the file stays readable and its diff short.
    text = json.dumps({**stored, "trees": "TREES"}, indent=2).replace(
        '"TREES"', "[\n" + ",\n".join("    " + json.dumps(tree) for tree in stored["trees"]) + "\n  ]")
    Path(args.out).write_text(text + "\n", encoding="utf-8")
    print(f"weights fitted on {len(data)} sentences of {', '.join(names)} written to {args.out}")


if __name__ == "__main__":
    main()
