"""How well an automatic evaluator agrees with the human labels (UniSumEval paper 6 and D.2; FineSurE 4 and D;
SBERTScore paper 4.2 and 5.6).

Summary level: Pearson correlation between human and evaluator scores over summaries (UniSumEval eq. 7), and
Spearman beside it (FineSurE eq. 4 reports both). System level: Spearman rank correlation between the summarizers'
mean human and mean evaluator scores (eq. 8-10). Overall, per domain and per source dataset (a domain may gather
several sources), with p-values and the number of points. A correlation that cannot be computed (too few points, a
constant side) is NaN with a reason, never an exception or a SciPy warning.

Sentence level, error detection against the human fact-verification majority (1 = error): the documents are split
50/50 at random with a fixed seed; on the validation half the threshold that maximises balanced accuracy is chosen
(a sentence is flagged as an error when its score is below it); on the test half the balanced accuracy at that
threshold, the ROC-AUC and the confusion matrix are reported (SBERTScore paper 4.2). Two evaluators combine as in
its figure 1: AND (a sentence is consistent only when both say so) and OR (when at least one says so).
"""

import dataclasses
import math
import warnings
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np
from scipy import stats
from sklearn.metrics import balanced_accuracy_score, confusion_matrix, roc_auc_score, roc_curve

# Two points always lie on a line (r = +-1, p = 1): a correlation needs three to say anything.
MIN_POINTS = 3


@dataclasses.dataclass(frozen=True)
class Correlation:
    """A correlation coefficient, its two-sided p-value, the number of points and, if NaN, why."""

    statistic: float
    p_value: float
    n: int
    reason: str = ""
    ci_low: float = math.nan  # 95% confidence interval (Pearson only: Fisher's z, as SciPy computes it).
    ci_high: float = math.nan

    @property
    def defined(self) -> bool:
        return not math.isnan(self.statistic)


@dataclasses.dataclass(frozen=True)
class LevelCorrelations:
    summary_level: Correlation  # Pearson over summaries.
    system_level: Correlation  # Spearman over summarizer means.
    summary_level_spearman: Correlation = Correlation(math.nan, math.nan, 0, "not computed")


@dataclasses.dataclass(frozen=True)
class EvaluatorBenchmark:
    overall: LevelCorrelations
    by_domain: dict[Hashable, LevelCorrelations]
    by_source: dict[Hashable, LevelCorrelations] = dataclasses.field(default_factory=dict)


def pearson(human: Sequence[float | None], evaluator: Sequence[float | None]) -> Correlation:
    """scipy.stats.pearsonr over the pairs where both scores exist."""
    return _correlate(stats.pearsonr, human, evaluator)


def spearman(human: Sequence[float | None], evaluator: Sequence[float | None]) -> Correlation:
    """scipy.stats.spearmanr over the pairs where both scores exist."""
    return _correlate(stats.spearmanr, human, evaluator)


def rows_from_scores(
    human: Mapping[tuple[Hashable, Hashable], float | None],
    evaluator: Mapping[tuple[Hashable, Hashable], float | None],
    domains: Mapping[Hashable, Hashable] | None = None,
    sources: Mapping[Hashable, Hashable] | None = None,
) -> list[dict]:
    """Join two {(uid, model): score} mappings into benchmark rows; `domains` and `sources` map uid to the
    document's domain and source dataset.

    Only summaries scored on both sides are kept (an inner join).
    """
    rows = []
    for uid, model in human.keys() & evaluator.keys():
        row = {"uid": uid, "model": model, "human": human[uid, model], "evaluator": evaluator[uid, model]}
        if domains is not None:
            row["domain"] = domains.get(uid)
        if sources is not None:
            row["source"] = sources.get(uid)
        rows.append(row)
    return sorted(rows, key=lambda row: (str(row["uid"]), str(row["model"])))


def summary_level_correlation(
    rows: Iterable[Mapping], human_key: str = "human", evaluator_key: str = "evaluator", *, method=None
) -> Correlation:
    """Pearson over summaries (paper eq. 7); `method=spearman` for the rank version."""
    pairs = _complete_pairs(rows, human_key, evaluator_key)
    return (method or pearson)([human for _, human, _ in pairs], [evaluator for _, _, evaluator in pairs])


def system_level_correlation(
    rows: Iterable[Mapping], human_key: str = "human", evaluator_key: str = "evaluator"
) -> Correlation:
    """Spearman between per-summarizer means (paper eq. 8-10).

    Means run over the summaries scored on both sides, so both rankings rest on the same summaries.
    """
    by_model: dict[Hashable, list[tuple[float, float]]] = defaultdict(list)
    for model, human, evaluator in _complete_pairs(rows, human_key, evaluator_key):
        by_model[model].append((human, evaluator))
    # Rounded: means equal on paper must tie in the ranking, and (0.2 + 0.4) / 2 is not 0.3 in floating point.
    means = [np.round(np.mean(pairs, axis=0), 12) for pairs in by_model.values()]
    return spearman([human for human, _ in means], [evaluator for _, evaluator in means])


def benchmark_evaluator(
    rows: Iterable[Mapping], human_key: str = "human", evaluator_key: str = "evaluator"
) -> EvaluatorBenchmark:
    """Summary- and system-level correlations, overall, per `domain` and per `source` (rows without one: overall
    only).

    Each row is one summary with `model`, optionally `domain` and `source`, and the two scores (None when
    undefined, e.g. completeness for a document without human key-facts).
    """
    rows = list(rows)
    groups: dict[str, dict[Hashable, list[Mapping]]] = {"domain": defaultdict(list), "source": defaultdict(list)}
    for row in rows:
        for key, grouped in groups.items():
            if row.get(key) is not None:
                grouped[row[key]].append(row)

    def levels(subset: list[Mapping]) -> LevelCorrelations:
        return LevelCorrelations(
            summary_level=summary_level_correlation(subset, human_key, evaluator_key),
            system_level=system_level_correlation(subset, human_key, evaluator_key),
            summary_level_spearman=summary_level_correlation(subset, human_key, evaluator_key, method=spearman),
        )

    def by(key: str) -> dict[Hashable, LevelCorrelations]:
        return {group: levels(subset) for group, subset in sorted(groups[key].items(), key=_by_str)}

    return EvaluatorBenchmark(overall=levels(rows), by_domain=by("domain"), by_source=by("source"))


def _by_str(item: tuple) -> str:
    return str(item[0])


def _complete_pairs(rows: Iterable[Mapping], human_key: str, evaluator_key: str) -> list[tuple]:
    return [
        (row.get("model"), float(row[human_key]), float(row[evaluator_key]))
        for row in rows
        if _is_score(row.get(human_key)) and _is_score(row.get(evaluator_key))
    ]


def _is_score(value) -> bool:
    return value is not None and not math.isnan(float(value))


def _correlate(function, human: Sequence[float | None], evaluator: Sequence[float | None]) -> Correlation:
    if len(human) != len(evaluator):
        raise ValueError(f"{len(human)} human scores but {len(evaluator)} evaluator scores.")
    pairs = [(float(x), float(y)) for x, y in zip(human, evaluator) if _is_score(x) and _is_score(y)]
    n = len(pairs)
    if n == 0:
        return Correlation(math.nan, math.nan, n, "no summary has both a human and an evaluator score")
    if n < MIN_POINTS:
        return Correlation(math.nan, math.nan, n, f"fewer than {MIN_POINTS} points")
    x, y = np.array(pairs).T
    for name, values in (("human", x), ("evaluator", y)):
        if np.ptp(values) == 0:
            return Correlation(math.nan, math.nan, n, f"the {name} scores are constant")
    with warnings.catch_warnings():
        # The checks above catch the undefined cases; near-constant input may still make SciPy warn.
        warnings.simplefilter("ignore")
        result = function(x, y)
        statistic, p_value = float(result.statistic), float(result.pvalue)
        low = high = math.nan
        if hasattr(result, "confidence_interval") and n > 3:
            interval = result.confidence_interval(0.95)
            low, high = float(interval.low), float(interval.high)
    reason = "" if math.isfinite(statistic) else "undefined for these scores"
    return Correlation(statistic, p_value, n, reason, low, high)


# --- Sentence level: error detection against the human fact-verification labels (SBERTScore paper 4.2, 5.6).

VALIDATION_SEED = 0


@dataclasses.dataclass(frozen=True)
class DocumentSplit:
    """Documents split 50/50 at random: the threshold is chosen on `validation`, results reported on `test`."""

    seed: int
    validation: frozenset
    test: frozenset

    def describe(self) -> str:
        return (f"documents split 50/50 at random (seed {self.seed}): {len(self.validation)} for validation, where "
                f"the threshold maximising balanced accuracy is chosen, {len(self.test)} for test, where the results "
                "are measured")


def split_documents(documents: Iterable[Hashable], seed: int = VALIDATION_SEED) -> DocumentSplit:
    """A seeded permutation of the sorted document keys; the first half (rounded up) is the validation half.

    By document, not by sentence: sentences of one document (and its summaries) are alike, and a threshold
    chosen on some of them would be tested on their neighbours.
    """
    keys = sorted(set(documents), key=str)
    order = np.random.default_rng(seed).permutation(len(keys))
    half = (len(keys) + 1) // 2
    return DocumentSplit(seed=seed, validation=frozenset(keys[i] for i in order[:half]),
                         test=frozenset(keys[i] for i in order[half:]))


@dataclasses.dataclass(frozen=True)
class SentenceScore:
    """One summary sentence: its document, a key that identifies it, the evaluator's score (higher = more likely
    faithful) and the human majority label (True = factual error)."""

    document: Hashable
    key: Hashable
    score: float
    error: bool


@dataclasses.dataclass(frozen=True)
class Detection:
    """Error detection on the test half; positives are sentences with a factual error."""

    balanced_accuracy: float
    roc_auc: float  # NaN for a combination: it has no score, only a verdict.
    tn: int
    fp: int
    fn: int
    tp: int
    n_test: int
    threshold: float = math.nan  # A sentence is flagged when its score is below it; NaN for a combination.
    validation_balanced_accuracy: float = math.nan
    n_validation: int = 0
    reason: str = ""
    roc: tuple[tuple[float, float], ...] = ()  # (false positive rate, true positive rate) on the test half.

    @property
    def defined(self) -> bool:
        return not math.isnan(self.balanced_accuracy)


def choose_threshold(scores: Sequence[float], errors: Sequence[bool]) -> tuple[float, float]:
    """(threshold, balanced accuracy) maximising balanced accuracy when scores below the threshold are flagged.

    Candidates are the midpoints between consecutive distinct scores (every distinct split of the sentences); on a
    tie the lowest threshold wins. NaN when there is nothing to choose (constant scores, a single class).
    """
    values, truth = np.asarray(scores, dtype=float), np.asarray(errors, dtype=bool)
    distinct = np.unique(values)
    if len(distinct) < 2 or truth.all() or not truth.any():
        return math.nan, math.nan
    best = (math.nan, -math.inf)
    for threshold in (distinct[:-1] + distinct[1:]) / 2:
        accuracy = balanced_accuracy_score(truth, values < threshold)
        if accuracy > best[1]:
            best = (float(threshold), float(accuracy))
    return best


def _undefined(reason: str, **counts) -> Detection:
    return Detection(math.nan, math.nan, 0, 0, 0, 0, reason=reason, **counts)


def _verdicts(truth: np.ndarray, flagged: np.ndarray) -> tuple[float, tuple[int, int, int, int]]:
    tn, fp, fn, tp = (int(v) for v in confusion_matrix(truth, flagged, labels=[False, True]).ravel())
    return float(balanced_accuracy_score(truth, flagged)), (tn, fp, fn, tp)


def error_detection(sentences: Sequence[SentenceScore], split: DocumentSplit) -> Detection:
    """Threshold chosen on the validation documents; balanced accuracy, ROC-AUC and confusion matrix on the test
    documents. Sentences of documents in neither half are ignored."""
    validation = [s for s in sentences if s.document in split.validation]
    test = [s for s in sentences if s.document in split.test]
    counts = {"n_validation": len(validation), "n_test": len(test)}
    threshold, validation_accuracy = choose_threshold([s.score for s in validation], [s.error for s in validation])
    if math.isnan(threshold):
        return _undefined("no threshold to choose: the validation half has constant scores or only one class",
                          **counts)
    truth = np.array([s.error for s in test], dtype=bool)
    if truth.all() or not truth.any():
        return _undefined("the test half has only one class", threshold=threshold,
                          validation_balanced_accuracy=validation_accuracy, **counts)
    scores = np.array([s.score for s in test], dtype=float)
    accuracy, (tn, fp, fn, tp) = _verdicts(truth, scores < threshold)
    # A low score means an error: the error's score is the negated evaluator score.
    roc_auc = float(roc_auc_score(truth, -scores))
    false_positive, true_positive, _ = roc_curve(truth, -scores)
    return Detection(accuracy, roc_auc, tn, fp, fn, tp, len(test), threshold, validation_accuracy, len(validation),
                     roc=tuple((float(x), float(y)) for x, y in zip(false_positive, true_positive)))


def combined_detection(first: Sequence[SentenceScore], second: Sequence[SentenceScore],
                       split: DocumentSplit) -> dict[str, Detection]:
    """The AND and OR combinations of two evaluators (SBERTScore paper, figure 1) on the test sentences both scored.

    Each evaluator keeps the threshold chosen on its own validation sentences. AND: a sentence is consistent only
    when both say so (flagged when either flags it); OR: consistent when at least one says so (flagged when both do).
    """
    thresholds = []
    for sentences in (first, second):
        validation = [s for s in sentences if s.document in split.validation]
        thresholds.append(choose_threshold([s.score for s in validation], [s.error for s in validation])[0])
    if any(math.isnan(t) for t in thresholds):
        reason = "no threshold for one of the two evaluators"
        return {"and": _undefined(reason), "or": _undefined(reason)}
    other = {s.key: s for s in second if s.document in split.test}
    pairs = [(s, other[s.key]) for s in first if s.document in split.test and s.key in other]
    truth = np.array([a.error for a, _ in pairs], dtype=bool)
    if truth.all() or not truth.any():
        reason = "the sentences both evaluators scored in the test half have only one class"
        return {"and": _undefined(reason, n_test=len(pairs)), "or": _undefined(reason, n_test=len(pairs))}
    flagged_first = np.array([a.score < thresholds[0] for a, _ in pairs])
    flagged_second = np.array([b.score < thresholds[1] for _, b in pairs])
    results = {}
    for name, flagged in (("and", flagged_first | flagged_second), ("or", flagged_first & flagged_second)):
        accuracy, (tn, fp, fn, tp) = _verdicts(truth, flagged)
        results[name] = Detection(accuracy, math.nan, tn, fp, fn, tp, len(pairs))
    return results
