"""How well an automatic evaluator agrees with the human scores (UniSumEval paper, 6 and appendix D.2).

Summary level: Pearson correlation between human and evaluator scores over summaries (eq. 7).
System level: Spearman rank correlation between the summarizers' mean human and mean evaluator scores
(eq. 8-10). Both overall and per domain, with p-values and the number of points. A correlation that
cannot be computed (too few points, a constant side) is NaN with a reason, never an exception or a
SciPy warning.
"""

import dataclasses
import math
import warnings
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np
from scipy import stats

# Two points always lie on a line (r = +-1, p = 1): a correlation needs three to say anything.
MIN_POINTS = 3


@dataclasses.dataclass(frozen=True)
class Correlation:
    """A correlation coefficient, its two-sided p-value, the number of points and, if NaN, why."""

    statistic: float
    p_value: float
    n: int
    reason: str = ""

    @property
    def defined(self) -> bool:
        return not math.isnan(self.statistic)


@dataclasses.dataclass(frozen=True)
class LevelCorrelations:
    summary_level: Correlation
    system_level: Correlation


@dataclasses.dataclass(frozen=True)
class EvaluatorBenchmark:
    overall: LevelCorrelations
    by_domain: dict[Hashable, LevelCorrelations]


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
) -> list[dict]:
    """Join two {(uid, model): score} mappings into benchmark rows; `domains` maps uid to domain.

    Only summaries scored on both sides are kept (an inner join).
    """
    rows = []
    for uid, model in human.keys() & evaluator.keys():
        row = {"uid": uid, "model": model, "human": human[uid, model], "evaluator": evaluator[uid, model]}
        if domains is not None:
            row["domain"] = domains.get(uid)
        rows.append(row)
    return sorted(rows, key=lambda row: (str(row["uid"]), str(row["model"])))


def summary_level_correlation(
    rows: Iterable[Mapping], human_key: str = "human", evaluator_key: str = "evaluator"
) -> Correlation:
    """Pearson over summaries (paper eq. 7)."""
    pairs = _complete_pairs(rows, human_key, evaluator_key)
    return pearson([human for _, human, _ in pairs], [evaluator for _, _, evaluator in pairs])


def system_level_correlation(
    rows: Iterable[Mapping], human_key: str = "human", evaluator_key: str = "evaluator"
) -> Correlation:
    """Spearman between per-summarizer means (paper eq. 8-10).

    Means run over the summaries scored on both sides, so both rankings rest on the same summaries.
    """
    by_model: dict[Hashable, list[tuple[float, float]]] = defaultdict(list)
    for model, human, evaluator in _complete_pairs(rows, human_key, evaluator_key):
        by_model[model].append((human, evaluator))
    means = [np.mean(pairs, axis=0) for pairs in by_model.values()]
    return spearman([human for human, _ in means], [evaluator for _, evaluator in means])


def benchmark_evaluator(
    rows: Iterable[Mapping], human_key: str = "human", evaluator_key: str = "evaluator"
) -> EvaluatorBenchmark:
    """Summary- and system-level correlations, overall and per `domain` (rows without one: overall only).

    Each row is one summary with `model`, optionally `domain`, and the two scores (None when undefined,
    e.g. completeness for a document without human key-facts).
    """
    rows = list(rows)
    by_domain: dict[Hashable, list[Mapping]] = defaultdict(list)
    for row in rows:
        if row.get("domain") is not None:
            by_domain[row["domain"]].append(row)

    def levels(subset: list[Mapping]) -> LevelCorrelations:
        return LevelCorrelations(
            summary_level=summary_level_correlation(subset, human_key, evaluator_key),
            system_level=system_level_correlation(subset, human_key, evaluator_key),
        )

    return EvaluatorBenchmark(
        overall=levels(rows),
        by_domain={domain: levels(subset) for domain, subset in sorted(by_domain.items(), key=_by_str)},
    )


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
    reason = "" if math.isfinite(statistic) else "undefined for these scores"
    return Correlation(statistic, p_value, n, reason)
