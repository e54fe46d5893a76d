"""Weighing the offline labeler's evidence when the verifier runs: no single flag decides.

Each check flags faithful sentences too (a number computed from two others looks absent, a detail fused from far
away looks taken from elsewhere), and so does the verifier (a close paraphrase of a long sentence); where they
disagree, one of them is wrong. A logistic model weighs them together: each check's flag, the best cosine
similarity, the verifier's log-odds and whether the document is a dialogue (where both flag more faithful
sentences). A sentence is flagged when the weighed probability of an error is above one half.

The weights are fitted by `benchmarks/fit_weighing.py` on the calibration sets (benchmarks/offline_judge.CALIBRATION:
hand-written sets that trained neither the verifier nor the checks' thresholds), with both classes weighed equally,
as balanced accuracy counts them, and written to `verifier/weighing.json` beside the verifier's weights.
"""

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

HERE = Path(__file__).resolve().with_name("verifier")
WEIGHING = HERE / "weighing.json"
FEATURES = ("absent", "conflicts", "far_detail", "name_probe", "opposites", "reversed", "opposite_probe",
            "cosine", "verifier_log_odds", "dialogue")
# The verifier's probability is clipped before its log-odds are taken: a score of exactly 0 or 1 stays finite.
CLIP = 1e-4


class Evidence(Protocol):
    """What the weighing reads from the labeler's Findings (assist/llm/offline.py)."""

    absent: tuple
    conflicts: tuple
    opposites: tuple
    reversed: tuple
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
    return [float(bool(found.absent)), float(bool(found.conflicts)), float(bool(found.far_detail)),
            float(bool(found.name_probe)), float(bool(found.opposites)), float(bool(found.reversed)),
            float(bool(found.opposite_probe)), found.score, math.log(p / (1 - p)), float(dialogue)]


@dataclass(frozen=True)
class Weighing:
    weights: dict[str, float]
    bias: float
    sets: tuple[str, ...] = ()

    def probability(self, found: Evidence, dialogue: bool) -> float:
        """The weighed probability that the sentence carries an error."""
        z = self.bias + sum(self.weights[name] * value for name, value in zip(FEATURES, features(found, dialogue)))
        return 1 / (1 + math.exp(-z))

    @classmethod
    def read(cls, path: Path) -> "Weighing":
        stored = json.loads(path.read_text(encoding="utf-8"))
        missing = [name for name in FEATURES if name not in stored["weights"]]
        if missing:
            raise ValueError(f"{path} has no weight for {', '.join(missing)}")
        return cls({name: float(stored["weights"][name]) for name in FEATURES}, float(stored["bias"]),
                   tuple(stored.get("sets", ())))


@cache
def shipped() -> Weighing:
    return Weighing.read(WEIGHING)
