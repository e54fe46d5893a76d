"""Dawid-Skene label aggregation: the second opinion shown beside majority vote.

Majority vote stays the label of record (paper section 4, appendix D.1; exports.scores.majority_vote). Dawid and
Skene (1979), "Maximum likelihood estimation of observer error-rates using the EM algorithm", Applied Statistics
28(1):20-28, instead weighs each annotator by a confusion matrix estimated from all their labels, so a careless
annotator counts for less; where the two disagree is worth a manager's look.

Plain functions over plain data: `labels` is an iterable of (unit, annotator, label) triples, any hashable keys and
labels. Callers pass counted human labels only: an AI pre-label is never a vote, since the benchmark exists to judge
AI evaluators, and this module takes whatever it is given.

Our own EM in NumPy rather than crowd-kit's `DawidSkene`: the algorithm is short, and crowd-kit (Apache-2.0, 1.4.2)
requires transformers and nltk, which the project does not otherwise need. Its numbers are a cross-check in the tests.
"""

import dataclasses
import functools
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence

import numpy as np

from .scores import majority_vote

Label = Hashable
Triple = tuple[Hashable, Hashable, Label]

# Posteriors closer than this to a unit's best one count as tied with it: exact symmetry in the data can still
# leave the last bits of two posteriors different.
TIE_TOLERANCE = 1e-12


@dataclasses.dataclass(frozen=True)
class DawidSkeneResult:
    """What the EM estimated.

    `units` and `annotators` are in order of first appearance in the input (`dawid_skene_codes`: range(U) and
    range(K)), `classes` as declared (or sorted). `posteriors[u, j]` is P(true class of units[u] = classes[j]);
    `label_index[u]` is the position in `classes` of units[u]'s most probable class, and `labels` maps each unit to
    that class.
    `confusion[k, j, l]` is annotator k's P(says classes[l] | true class is classes[j]) (Dawid and Skene's pi_jl^k):
    rows are the true class, columns the label given, each row sums to 1. `priors[j]` is P(true class = classes[j]).
    `iterations` is the number of E-steps run; `converged` whether the last one moved no posterior by more than
    `tolerance`.
    """

    classes: tuple[Label, ...]
    units: Sequence[Hashable]
    annotators: Sequence[Hashable]
    posteriors: np.ndarray
    label_index: np.ndarray
    confusion: np.ndarray
    priors: np.ndarray
    iterations: int
    converged: bool

    @functools.cached_property
    def labels(self) -> dict[Hashable, Label]:
        """Each unit's most probable class (built on first use: array callers read `label_index`)."""
        return dict(zip(self.units, (self.classes[j] for j in self.label_index.tolist())))

    def posterior(self, unit: Hashable) -> dict[Label, float]:
        """One unit's distribution over the classes."""
        row = self.posteriors[self._unit_index[unit]]
        return {label: float(p) for label, p in zip(self.classes, row)}

    def confusion_matrix(self, annotator: Hashable) -> np.ndarray:
        """One annotator's confusion matrix: rows the true class, columns the label given, in `classes` order."""
        return self.confusion[self._annotator_index[annotator]]

    def sensitivity(self, annotator: Hashable, positive: Label = True) -> float:
        """P(annotator says `positive` | the unit is `positive`), for a task with two classes."""
        j = self._class_index(positive)
        return float(self.confusion_matrix(annotator)[j, j])

    def specificity(self, annotator: Hashable, positive: Label = True) -> float:
        """P(annotator says the other class | the unit is the other class), for a task with two classes."""
        j = 1 - self._class_index(positive)
        return float(self.confusion_matrix(annotator)[j, j])

    @functools.cached_property
    def _unit_index(self) -> dict[Hashable, int]:
        return {unit: u for u, unit in enumerate(self.units)}

    @functools.cached_property
    def _annotator_index(self) -> dict[Hashable, int]:
        return {annotator: k for k, annotator in enumerate(self.annotators)}

    def _class_index(self, positive: Label) -> int:
        if len(self.classes) != 2:
            raise ValueError(f"Sensitivity and specificity need two classes, not {list(self.classes)}")
        if positive not in self.classes:
            raise ValueError(f"{positive!r} is not one of the classes {list(self.classes)}")
        return self.classes.index(positive)


def dawid_skene(
    labels: Iterable[Triple],
    *,
    classes: Sequence[Label] | None = None,
    on_tie: Label | None = None,
    smoothing: float = 0.01,
    max_iterations: int = 100,
    tolerance: float = 1e-6,
) -> DawidSkeneResult:
    """Dawid and Skene's (1979) EM over (unit, annotator, label) triples.

    Start: each unit's posterior is its majority-vote shares (2 of 3 annotators said True: P(True) = 2/3).
    M-step: priors are the mean posterior; annotator k's confusion row for true class j is
        pi_jl^k = (s + sum_u T_uj n_ul^k) / (L s + sum_u sum_l' T_uj n_ul'^k),
    where n_ul^k counts k's labels l on unit u (an annotator may label a unit twice: both count), L is the number of
    classes and s = `smoothing`, a small pseudo-count that keeps every entry above zero, so that one label nobody
    expected cannot rule a class out for good. s must be positive. E-step, in log space so that many annotators do
    not underflow:
        T_uj proportional to p_j * prod_k prod_l (pi_jl^k) ^ n_ul^k.
    One iteration is an E-step followed by an M-step, so the returned priors and confusion matrices are those the
    final posteriors imply. It stops once no posterior moved by more than `tolerance`, or after `max_iterations`
    (0 returns the majority-vote start and the parameters it implies). Deterministic: no random start.

    `classes`: the labels a unit can take, in order; without it, the labels seen, sorted. A label outside the
    declared classes raises ValueError. Most probable label: the class with the highest posterior; when several are
    tied (within TIE_TOLERANCE), `on_tie` if it is one of them (pass the task's TIE_BREAK rule to break ties as
    majority vote does), else the first of them in `classes` order.
    """
    if smoothing <= 0:
        raise ValueError("smoothing must be positive: it keeps every confusion entry, and so every log, finite")
    unit_codes, annotator_codes = [], []
    units, annotators = {}, {}
    raw_labels = []
    for unit, annotator, label in labels:
        unit_codes.append(units.setdefault(unit, len(units)))
        annotator_codes.append(annotators.setdefault(annotator, len(annotators)))
        raw_labels.append(label)
    class_tuple = tuple(_sorted_labels(set(raw_labels)) if classes is None else classes)
    position = {label: j for j, label in enumerate(class_tuple)}
    unknown = set(raw_labels).difference(position)
    if unknown:
        raise ValueError(f"Labels outside the declared classes: {sorted(map(repr, unknown))}")
    label_codes = [position[label] for label in raw_labels]

    data = _Codes(
        np.array(unit_codes, dtype=np.intp),
        np.array(annotator_codes, dtype=np.intp),
        np.array(label_codes, dtype=np.intp),
        len(units),
        len(annotators),
        len(class_tuple),
    )
    return _estimate(data, class_tuple, tuple(units), tuple(annotators), on_tie=on_tie, smoothing=smoothing,
                     max_iterations=max_iterations, tolerance=tolerance)


def dawid_skene_codes(
    unit: np.ndarray,
    annotator: np.ndarray,
    label: np.ndarray,
    *,
    classes: Sequence[Label],
    on_tie: Label | None = None,
    smoothing: float = 0.01,
    max_iterations: int = 100,
    tolerance: float = 1e-6,
) -> DawidSkeneResult:
    """`dawid_skene` over labels already coded as integers, for callers that read them as NumPy arrays (a project's
    ~335,000 labels at UniSumEval scale, exports.second_opinion): no Python object per label.

    The i-th label is on unit `unit[i]` (0..U-1), by annotator `annotator[i]` (0..K-1), and says
    `classes[label[i]]`. Every unit code below the largest must have a label (U = largest + 1), and so must every
    annotator code. The result's `units` are range(U) and its `annotators` range(K): the caller keeps its own keys.
    """
    if smoothing <= 0:
        raise ValueError("smoothing must be positive: it keeps every confusion entry, and so every log, finite")
    unit, annotator, label = (np.asarray(codes, dtype=np.intp) for codes in (unit, annotator, label))
    if not len(unit) == len(annotator) == len(label):
        raise ValueError("unit, annotator and label must have one entry per label")
    class_tuple = tuple(classes)
    if len(label) and (label.min() < 0 or label.max() >= len(class_tuple)):
        raise ValueError(f"Label codes outside 0..{len(class_tuple) - 1}")
    n_units = int(unit.max()) + 1 if len(unit) else 0
    n_annotators = int(annotator.max()) + 1 if len(annotator) else 0
    if len(unit) and (unit.min() < 0 or annotator.min() < 0 or np.bincount(unit).min() == 0
                      or np.bincount(annotator).min() == 0):
        raise ValueError("Unit and annotator codes must be 0..U-1 and 0..K-1, each with a label")
    data = _Codes(unit, annotator, label, n_units, n_annotators, len(class_tuple))
    return _estimate(data, class_tuple, range(n_units), range(n_annotators), on_tie=on_tie, smoothing=smoothing,
                     max_iterations=max_iterations, tolerance=tolerance)


def _estimate(data: "_Codes", classes: tuple[Label, ...], units: Sequence[Hashable], annotators: Sequence[Hashable], *,
              on_tie: Label | None, smoothing: float, max_iterations: int, tolerance: float) -> DawidSkeneResult:
    """The EM of `dawid_skene` over coded labels."""
    posteriors = _majority_shares(data)
    priors, confusion = _m_step(data, posteriors, smoothing)
    iterations, converged = 0, not data.n_units  # No label: nothing to estimate, priors are nan.
    while data.n_units and iterations < max_iterations:
        updated = _e_step(data, priors, confusion)
        change = float(np.abs(updated - posteriors).max(initial=0.0))
        posteriors = updated
        priors, confusion = _m_step(data, posteriors, smoothing)
        iterations += 1
        if change <= tolerance:
            converged = True
            break

    return DawidSkeneResult(
        classes=classes,
        units=units,
        annotators=annotators,
        posteriors=posteriors,
        label_index=_most_probable(posteriors, classes, on_tie),
        confusion=confusion,
        priors=priors,
        iterations=iterations,
        converged=converged,
    )


def majority_differs_share(result: DawidSkeneResult, labels: Iterable[Triple], *, on_tie: bool | None) -> float:
    """Share of units whose Dawid-Skene label is not their majority label.

    `labels`: the same binary (bool) triples `result` was computed from. The majority is the project's own
    (exports.scores.majority_vote with the task's TIE_BREAK rule as `on_tie`); units it leaves undecided (a tie with
    `on_tie=None`) are left out. Pass the same rule as `on_tie` to dawid_skene so that both break ties alike.
    nan when no unit is decided.
    """
    votes = defaultdict(list)
    for unit, _annotator, label in labels:
        votes[unit].append(label)
    decided = differ = 0
    for unit, unit_votes in votes.items():
        majority = majority_vote(unit_votes, on_tie=on_tie)
        if majority is None:
            continue
        decided += 1
        differ += result.labels[unit] != majority
    return differ / decided if decided else float("nan")


@dataclasses.dataclass(frozen=True)
class _Codes:
    """Each label as three integer codes (unit, annotator, class), and how many of each there are."""

    unit: np.ndarray
    annotator: np.ndarray
    label: np.ndarray
    n_units: int
    n_annotators: int
    n_classes: int

    @functools.cached_property
    def cells(self) -> np.ndarray:
        """Each label's (annotator, class given) cell: annotator * n_classes + class."""
        return self.annotator * self.n_classes + self.label


def _sorted_labels(seen: set) -> list:
    try:
        return sorted(seen)
    except TypeError:  # Mixed types (say bool and str): still a deterministic order.
        return sorted(seen, key=lambda label: (type(label).__name__, repr(label)))


def _majority_shares(data: _Codes) -> np.ndarray:
    cells = data.unit * data.n_classes + data.label
    counts = np.bincount(cells, minlength=data.n_units * data.n_classes).reshape(data.n_units, data.n_classes)
    return counts / counts.sum(axis=1, keepdims=True)


def _m_step(data: _Codes, posteriors: np.ndarray, smoothing: float) -> tuple[np.ndarray, np.ndarray]:
    priors = posteriors.mean(axis=0) if data.n_units else np.full(data.n_classes, np.nan)
    counts = np.empty((data.n_annotators, data.n_classes, data.n_classes))
    for j in range(data.n_classes):
        counts[:, j, :] = np.bincount(
            data.cells, weights=posteriors[data.unit, j], minlength=data.n_annotators * data.n_classes
        ).reshape(data.n_annotators, data.n_classes)
    counts += smoothing
    return priors, counts / counts.sum(axis=2, keepdims=True)


def _e_step(data: _Codes, priors: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):  # A class no label ever named has prior 0: its posterior stays 0.
        log_priors = np.log(priors)
    # Row k * L + l: log P(annotator k says l | true class j) for every j, one log per entry rather than per label.
    log_confusion = np.log(confusion).transpose(0, 2, 1).reshape(-1, data.n_classes)
    per_label = log_confusion[data.cells]
    # Column by column: a max along rows of 2 classes over 100,000 units took 18 ms, np.maximum of the two columns
    # well under 1 (measured); this runs every iteration.
    log_joint = [log_priors[j] + np.bincount(data.unit, weights=per_label[:, j], minlength=data.n_units)
                 for j in range(data.n_classes)]
    top = functools.reduce(np.maximum, log_joint)
    joint = [np.exp(column - top) for column in log_joint]
    total = functools.reduce(np.add, joint)
    return np.column_stack([column / total for column in joint])


def _most_probable(posteriors: np.ndarray, classes: tuple[Label, ...], on_tie: Label | None) -> np.ndarray:
    """Per unit, the position in `classes` of its most probable class."""
    if not len(posteriors):
        return np.zeros(0, dtype=np.intp)
    tied = posteriors >= posteriors.max(axis=1, keepdims=True) - TIE_TOLERANCE
    best = tied.argmax(axis=1)  # The first tied class in `classes` order.
    if on_tie in classes:
        column = classes.index(on_tie)
        best = np.where((tied.sum(axis=1) > 1) & tied[:, column], column, best)
    return best
