"""Weighing the offline labeler's evidence when the verifier runs: no single flag decides.

Each check flags faithful sentences too (a number computed from two others looks absent, a detail fused from far
away looks taken from elsewhere), and so does the verifier (a close paraphrase of a long sentence); where they
disagree, one of them is wrong. A boosted ensemble of small decision trees weighs them together: each check's flag
and how strongly it fired (a probe's rise in similarity, how far away a detail was found), the best cosine
similarity, the verifier's log-odds, how many details the document states, implies or lacks, and whether the
document is a dialogue (where both flag more faithful sentences). Trees, unlike a sum of weights, can learn that a
check matters less where the verifier is confident, and the other way round. A sentence is flagged when the weighed
probability of an error is above one half.

The trees are constrained to be monotonic in the evidence of an error: a check that fires, a stronger probe, a detail
found further away or a higher verifier score never lowers the probability. They are fitted by
`benchmarks/fit_weighing.py` with scikit-learn's HistGradientBoostingClassifier on the calibration sets
(benchmarks/offline_judge.CALIBRATION: hand-written sets that trained neither the verifier nor the checks'
thresholds), both classes weighed equally, as balanced accuracy counts them, and written to `verifier/weighing.json`
as plain nodes: the labeler walks them itself (a few hundred comparisons per sentence), so the shipped file is data,
never code to unpickle, and reads the same under any scikit-learn version.
"""

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

from .offline_probes import NAME, OPPOSITE_WORD

HERE = Path(__file__).resolve().with_name("verifier")
WEIGHING = HERE / "weighing.json"
CHECKS = ("absent", "conflicts", "far_detail", "name_probe", "opposites", "reversed", "opposite_probe")
FEATURES = (*CHECKS, "cosine", "verifier_log_odds", "dialogue", "far_detail_gap", "outside_closest",
            "unknown_names", "derived_numbers", "checked_details", "name_probe_gain", "opposite_probe_gain")
# Evidence of an error: the probability never falls as these rise (the trees' monotonic constraint), so that a check
# that fires never lowers it, however strongly it fires.
INCREASING = (*CHECKS, "verifier_log_odds", "far_detail_gap", "outside_closest", "name_probe_gain",
              "opposite_probe_gain")
# The verifier's probability is clipped before its log-odds are taken: a score of exactly 0 or 1 stays finite.
CLIP = 1e-4
# A probe that did not run (an earlier check decided) counts as a variant that fits the document no better.
NOT_PROBED = -1.0


class Evidence(Protocol):
    """What the weighing reads from the labeler's Findings (assist/llm/offline.py)."""

    absent: tuple
    conflicts: tuple
    opposites: tuple
    reversed: tuple
    checked: tuple
    unknown_names: tuple
    derived: tuple
    outside: bool
    far: object
    probes: dict
    score: float
    verifier: float | None

    @property
    def far_detail(self) -> object: ...

    @property
    def name_probe(self) -> object: ...

    @property
    def opposite_probe(self) -> object: ...


def features(found: Evidence, dialogue: bool) -> list[float]:
    """The values FEATURES name, in that order, for one sentence's findings (the verifier must have run)."""
    if found.verifier is None:
        raise ValueError("the evidence is weighed only where the verifier ran")
    p = min(max(found.verifier, CLIP), 1 - CLIP)
    probes = found.probes
    return [*(float(bool(getattr(found, check))) for check in CHECKS), found.score, math.log(p / (1 - p)),
            float(dialogue), found.score - found.far.score if found.far else 0.0, float(found.outside),
            float(len(found.unknown_names)), float(len(found.derived)), float(len(found.checked)),
            probes[NAME].gain if NAME in probes else NOT_PROBED,
            probes[OPPOSITE_WORD].gain if OPPOSITE_WORD in probes else NOT_PROBED]


# A node: (feature index, threshold, left child, right child, value). A leaf has feature index -1 and its value is
# the tree's contribution; an inner node sends a value at or below its threshold left.
Node = tuple[int, float, int, int, float]


@dataclass(frozen=True)
class Weighing:
    baseline: float  # The log-odds before any tree.
    trees: tuple[tuple[Node, ...], ...]
    sets: tuple[str, ...] = ()

    def probability(self, found: Evidence, dialogue: bool) -> float:
        """The weighed probability that the sentence carries an error."""
        return self.probability_of(features(found, dialogue))

    def probability_of(self, values: list[float]) -> float:
        z = self.baseline
        for nodes in self.trees:
            at = 0
            while nodes[at][0] >= 0:
                feature, threshold, left, right, _ = nodes[at]
                at = left if values[feature] <= threshold else right
            z += nodes[at][4]
        return 1 / (1 + math.exp(-z))

    @classmethod
    def read(cls, path: Path) -> "Weighing":
        stored = json.loads(path.read_text(encoding="utf-8"))
        if list(stored.get("features", ())) != list(FEATURES):
            raise ValueError(f"{path} weighs other features than the labeler computes: {stored.get('features')}")
        trees = tuple(tuple((int(f), float(t), int(left), int(right), float(v)) for f, t, left, right, v in nodes)
                      for nodes in stored["trees"])
        for nodes in trees:
            for feature, _, left, right, _ in nodes:
                inside = 0 < left < len(nodes) and 0 < right < len(nodes)
                if feature >= len(FEATURES) or (feature >= 0 and not inside):
                    raise ValueError(f"{path} has a tree node that points outside its tree")
        return cls(float(stored["baseline"]), trees, tuple(stored.get("sets", ())))


@cache
def shipped() -> Weighing:
    return Weighing.read(WEIGHING)
