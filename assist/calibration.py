"""Choosing the offline labeler's similarity threshold on a project's own human labels.

The offline labeler flags a sentence when its best cosine similarity to the source is below the threshold, or when
a rule-based check flags it whatever the threshold (assist.llm.offline). Given, for every sentence with a human
fact-verification majority, its best similarity, whether a check flagged it and the human verdict, the threshold
that maximises balanced accuracy (the mean of the error and no-error recalls, as the SBERTScore paper reports
sentence-level detection, 4.2) is picked on a grid of 0.01. Balanced accuracy, because errors are rare (UniSumEval:
about one sentence in ten) and plain accuracy would reward flagging nothing.
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass

GRID = tuple(round(step / 100, 2) for step in range(0, 101))


class CalibrationError(ValueError):
    """The labels cannot support a calibration (no sentence, or only one kind of verdict)."""


@dataclass(frozen=True)
class Point:
    score: float  # Best cosine similarity to a source sentence.
    flagged_by_checks: bool  # A number, date, name, opposite-word or negation check flagged it.
    error: bool  # The human majority says the sentence has a factual error.


@dataclass(frozen=True)
class Calibration:
    threshold: float
    balanced_accuracy: float
    sentences: int
    errors: int
    default_threshold: float
    default_balanced_accuracy: float


def balanced_accuracy(points: Iterable[Point], threshold: float) -> float:
    tp = fn = tn = fp = 0
    for point in points:
        flagged = point.score < threshold or point.flagged_by_checks
        if point.error:
            tp, fn = tp + flagged, fn + (not flagged)
        else:
            fp, tn = fp + flagged, tn + (not flagged)
    if not (tp + fn) or not (tn + fp):
        return math.nan
    return (tp / (tp + fn) + tn / (tn + fp)) / 2


def choose_threshold(points: Iterable[Point], *, default: float) -> Calibration:
    """The grid threshold with the highest balanced accuracy; among equals, the one nearest `default` (so a
    calibration moves the threshold only as far as the labels ask)."""
    points = list(points)
    errors = sum(point.error for point in points)
    if not points:
        raise CalibrationError("no sentence has a human fact-verification majority label yet")
    if errors in (0, len(points)):
        kind = "erroneous" if errors == 0 else "correct"
        raise CalibrationError(f"all {len(points)} labeled sentences have the same verdict: balanced accuracy needs "
                               f"at least one sentence the annotators judged {kind}")
    scored = [(balanced_accuracy(points, threshold), -abs(threshold - default), threshold) for threshold in GRID]
    best, _, threshold = max(scored)
    return Calibration(threshold=threshold, balanced_accuracy=best, sentences=len(points), errors=errors,
                       default_threshold=default, default_balanced_accuracy=balanced_accuracy(points, default))
