"""Inter-annotator agreement (UniSumEval paper, section 4).

Krippendorff's alpha (nominal) for fact verification and key-fact alignment, Gwet's AC1 for key-fact
validation, whose labels are heavily imbalanced. Plain functions over plain data: `units` is a sequence
of units, each a sequence of the raters' labels (any hashable: bool, int, str) with `None` for a missing
rating; rows may differ in length. A 2-D float NumPy array (units x raters, NaN = missing) is accepted
too, and so is a `RatingCounts` made once by `rating_counts()` and shared by several calls.

Undefined coefficients are `nan`, never an exception: see each function for the cases.
"""

import dataclasses
import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from itertools import chain

import krippendorff
import numpy as np

Label = Hashable
Units = Sequence[Sequence[Label | None]]

# Resamples of at most this many cells are drawn at once, which bounds the bootstrap's memory.
_CHUNK_CELLS = 4_000_000


@dataclasses.dataclass(frozen=True)
class RatingCounts:
    """How many raters put each unit in each category: the one input every coefficient needs.

    `counts` has one row per unit rated at least once (a unit nobody rated carries no information, and
    irrCAC asks callers to drop such rows) and one column per entry of `categories`.
    """

    counts: np.ndarray
    categories: tuple[Label, ...]

    @property
    def n_units(self) -> int:
        """Units with at least two ratings: the only ones that show (dis)agreement."""
        return int((self.counts.sum(axis=1) >= 2).sum())

    @property
    def n_ratings(self) -> int:
        return int(self.counts.sum())


UnitsLike = Units | np.ndarray | RatingCounts


@dataclasses.dataclass(frozen=True)
class AgreementEstimate:
    """A coefficient with what a paper needs to report it.

    `ci_low`/`ci_high`: percentile bootstrap interval over units. `observed_agreement` and
    `chance_agreement` are the coefficient's own terms (alpha = (A_o - A_e) / (1 - A_e), Krippendorff
    2011; AC1 = (p_a - p_e) / (1 - p_e), Gwet 2008). `standard_error` is Gwet's analytic one (AC1 only).
    """

    coefficient: str
    value: float
    ci_low: float
    ci_high: float
    n_units: int
    n_ratings: int
    observed_agreement: float
    chance_agreement: float
    standard_error: float | None
    n_boot: int
    confidence: float

    def as_dict(self) -> dict:
        """JSON-ready: NaN becomes None, since JSON has no NaN."""
        return {
            key: None if isinstance(value, float) and math.isnan(value) else value
            for key, value in dataclasses.asdict(self).items()
        }


def rating_counts(units: UnitsLike, categories: Sequence[Label] | None = None) -> RatingCounts:
    """Convert units once into a units x categories count matrix.

    Without `categories`, the categories are the labels seen, sorted (so that results, bootstrap
    included, do not depend on hash order). With `categories`, columns follow that order, unused ones
    stay at zero, and a label outside it raises ValueError. Labels compare as Python values: True == 1.
    """
    if isinstance(units, RatingCounts):
        return _with_categories(units, categories)
    if isinstance(units, np.ndarray) and units.ndim == 2 and units.dtype.kind in "biuf":
        return _counts_from_array(units, categories)
    return _counts_from_rows(units, categories)


def krippendorff_alpha(units: UnitsLike) -> float:
    """Krippendorff's alpha for nominal data, computed by the `krippendorff` package.

    Units with fewer than two ratings are not pairable and do not count (Krippendorff 2011, sec. C).
    nan when no unit has two ratings, and when all pairable ratings fall in one category: the expected
    disagreement D_e is then 0 and alpha = 1 - D_o / D_e is 0/0.
    """
    pairable = _pairable(rating_counts(units).counts)
    used = pairable.sum(axis=0) > 0
    if used.sum() < 2:
        return math.nan
    return float(krippendorff.alpha(value_counts=pairable[:, used], level_of_measurement="nominal"))


def gwet_ac1(units: UnitsLike, categories: Sequence[Label] | None = None) -> float:
    """Gwet's AC1 for any number of raters and categories, with missing ratings.

    Gwet (2008), "Computing inter-rater reliability and its variance in the presence of high
    agreement", BJMSP 61:29-48; Gwet (2014), Handbook of Inter-Rater Reliability, 4th ed.; the same
    formulas as irrCAC's `gwet.ac1.raw` (R/agree.coeff3.raw.r). With r_ik the raters putting unit i in
    category k, r_i = sum_k r_ik, n the units rated at least once, n' those rated at least twice and q
    the number of categories:
        p_a = 1/n' * sum over units with r_i >= 2 of sum_k r_ik (r_ik - 1) / (r_i (r_i - 1))
        pi_k = 1/n * sum over all n units of r_ik / r_i
        p_e = 1/(q - 1) * sum_k pi_k (1 - pi_k)
        AC1 = (p_a - p_e) / (1 - p_e)
    So a unit rated once is left out of p_a but does count in pi_k, exactly as published.

    `categories` plays irrCAC's `categ.labels`: the categories the raters could choose (q), used or not.
    nan when no unit has two ratings. When every rating is in one category, AC1 = p_a = 1.0: with q >= 2
    declared categories p_e is 0 by the formula, and with a single category (q - 1 = 0) irrCAC likewise
    sets p_e to (practically) 0.
    """
    counts = rating_counts(units, categories)
    return _ac1_terms(counts.counts, len(counts.categories))[0]


def alpha_with_interval(
    units: UnitsLike, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95
) -> AgreementEstimate:
    """Alpha with a percentile bootstrap interval, resampling the pairable units with replacement.

    Units rated once add nothing to alpha, so they are not resampled either.
    """
    counts = rating_counts(units)
    pairable = _pairable(counts.counts)
    value = krippendorff_alpha(counts)
    observed, chance = _alpha_agreements(pairable)
    low, high = _bootstrap_interval(_alpha_from_weights, pairable, value, n_boot, seed, confidence)
    return AgreementEstimate(
        coefficient="krippendorff_alpha",
        value=value,
        ci_low=low,
        ci_high=high,
        n_units=counts.n_units,
        n_ratings=counts.n_ratings,
        observed_agreement=observed,
        chance_agreement=chance,
        standard_error=None,
        n_boot=n_boot,
        confidence=confidence,
    )


def ac1_with_interval(
    units: UnitsLike,
    categories: Sequence[Label] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> AgreementEstimate:
    """AC1 with Gwet's analytic standard error and a percentile bootstrap interval.

    The bootstrap resamples every unit rated at least once, since single ratings enter pi_k.
    """
    counts = rating_counts(units, categories)
    q = len(counts.categories)
    value, observed, chance, standard_error = _ac1_terms(counts.counts, q)

    def statistic(patterns: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return _ac1_from_weights(patterns, weights, q)

    low, high = _bootstrap_interval(statistic, counts.counts, value, n_boot, seed, confidence)
    return AgreementEstimate(
        coefficient="gwet_ac1",
        value=value,
        ci_low=low,
        ci_high=high,
        n_units=counts.n_units,
        n_ratings=counts.n_ratings,
        observed_agreement=observed,
        chance_agreement=chance,
        standard_error=standard_error,
        n_boot=n_boot,
        confidence=confidence,
    )


# Conversion ------------------------------------------------------------------------------------------


def _sorted_categories(labels: set) -> list:
    try:
        return sorted(labels)
    except TypeError:  # Mixed types (say int and str): still a deterministic order.
        return sorted(labels, key=lambda label: (type(label).__name__, repr(label)))


def _counts_from_rows(units: Units, categories: Sequence[Label] | None) -> RatingCounts:
    # One pass in C over all labels (chain, set, dict lookups through map), no Python-level loop:
    # this runs on ~110,000 units of a 335,000-label project.
    if not isinstance(units, Sequence):
        units = list(units)
    flat = list(chain.from_iterable(units))
    lengths = np.fromiter(map(len, units), dtype=np.intp, count=len(units))
    seen = set(flat)
    missing = {label for label in seen if label is None or label != label}  # None, or NaN from pandas.
    seen -= missing
    if categories is None:
        labels = _sorted_categories(seen)
    else:
        labels = list(categories)
        unknown = seen.difference(labels)
        if unknown:
            raise ValueError(f"Labels outside the declared categories: {sorted(map(repr, unknown))}")
    width = len(labels) + 1  # The last column collects missing ratings and is dropped.
    lookup = {label: code for code, label in enumerate(labels)}
    lookup.update(dict.fromkeys(missing, len(labels)))
    codes = np.fromiter(map(lookup.__getitem__, flat), dtype=np.intp, count=len(flat))
    cells = np.repeat(np.arange(len(units), dtype=np.intp) * width, lengths) + codes
    counts = np.bincount(cells, minlength=len(units) * width).reshape(len(units), width)[:, :-1]
    return RatingCounts(_drop_unrated(counts), tuple(labels))


def _counts_from_array(array: np.ndarray, categories: Sequence[Label] | None) -> RatingCounts:
    values = array.astype(float, copy=False)
    rated = ~np.isnan(values)
    rows = np.nonzero(rated)[0]
    labels, codes = np.unique(values[rated], return_inverse=True)
    labels = labels.tolist()
    if categories is not None:
        unknown = set(labels).difference(categories)
        if unknown:
            raise ValueError(f"Labels outside the declared categories: {sorted(unknown)}")
        position = {label: code for code, label in enumerate(categories)}
        codes = np.array([position[label] for label in labels], dtype=np.intp)[codes]
        labels = list(categories)
    width = len(labels)
    counts = np.bincount(rows * width + codes, minlength=len(values) * width).reshape(len(values), width)
    return RatingCounts(_drop_unrated(counts), tuple(labels))


def _with_categories(counts: RatingCounts, categories: Sequence[Label] | None) -> RatingCounts:
    if categories is None or tuple(categories) == counts.categories:
        return counts
    used = [label for label, total in zip(counts.categories, counts.counts.sum(axis=0)) if total]
    unknown = set(used).difference(categories)
    if unknown:
        raise ValueError(f"Labels outside the declared categories: {sorted(map(repr, unknown))}")
    position = {label: column for column, label in enumerate(counts.categories)}
    matrix = np.zeros((len(counts.counts), len(categories)), dtype=counts.counts.dtype)
    for column, label in enumerate(categories):
        if label in position:
            matrix[:, column] = counts.counts[:, position[label]]
    return RatingCounts(matrix, tuple(categories))


def _drop_unrated(counts: np.ndarray) -> np.ndarray:
    rated = counts.sum(axis=1) > 0
    return counts if rated.all() else counts[rated]


def _pairable(counts: np.ndarray) -> np.ndarray:
    return counts[counts.sum(axis=1) >= 2]


# Coefficients ----------------------------------------------------------------------------------------


def _alpha_agreements(pairable: np.ndarray) -> tuple[float, float]:
    """A_o = sum_c o_cc / n and A_e = sum_c n_c (n_c - 1) / (n (n - 1)) (Krippendorff 2011, sec. C)."""
    m = pairable.sum(axis=1)
    n = float(m.sum())
    if n < 2:
        return math.nan, math.nan
    diagonal = ((pairable * (pairable - 1)).sum(axis=1) / (m - 1)).sum()
    n_c = pairable.sum(axis=0).astype(float)
    return float(diagonal / n), float((n_c * (n_c - 1)).sum() / (n * (n - 1)))


def _alpha_from_weights(patterns: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Nominal alpha of each weighting of the pairable unit patterns, vectorized over resamples.

    alpha = 1 - (n - 1) (n - sum_c o_cc) / (n^2 - sum_c n_c^2), the nominal form of Krippendorff
    (2011, sec. C), where a unit with m_u values adds sum_c n_uc (n_uc - 1) / (m_u - 1) to sum_c o_cc.
    """
    m = patterns.sum(axis=1).astype(float)
    diagonal = (patterns * (patterns - 1)).sum(axis=1) / (m - 1)
    n = weights @ m
    n_c = weights @ patterns.astype(float)
    expected = n * n - (n_c * n_c).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1 - (n - 1) * (n - weights @ diagonal) / expected
    return np.where(expected > 0, alpha, np.nan)


def _ac1_terms(counts: np.ndarray, q: int) -> tuple[float, float, float, float]:
    """AC1, p_a, p_e and Gwet's standard error, as irrCAC's gwet.ac1.raw computes them.

    The variance is Gwet's linearisation (Gwet 2008; irrCAC): with
        ac1_i = (n/n') (p_a|i - p_e [r_i >= 2]) / (1 - p_e),
        p_e|i = 1/(q - 1) * sum_k r_ik (1 - pi_k) / r_i,
        ac1*_i = ac1_i - 2 (1 - AC1) (p_e|i - p_e) / (1 - p_e),
    var = 1/(n (n - 1)) * sum_i (ac1*_i - AC1)^2 (no finite-population correction).
    """
    n = len(counts)
    r = counts.sum(axis=1).astype(float)
    rated_twice = r >= 2
    n_twice = int(rated_twice.sum())
    if n_twice == 0:
        return math.nan, math.nan, math.nan, math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        unit_pa = np.where(rated_twice, (counts * (counts - 1)).sum(axis=1) / (r * (r - 1)), 0.0)
    pa = float(unit_pa[rated_twice].mean())
    pi = (counts / r[:, None]).mean(axis=0)
    pe = float((pi * (1 - pi)).sum() / (q - 1)) if q >= 2 else 0.0
    ac1 = (pa - pe) / (1 - pe)
    if n < 2 or q < 2:
        return ac1, pa, pe, math.nan
    unit_ac1 = (n / n_twice) * (unit_pa - pe * rated_twice) / (1 - pe)
    unit_pe = (counts @ (1 - pi)) / r / (q - 1)
    linearised = unit_ac1 - 2 * (1 - ac1) * (unit_pe - pe) / (1 - pe)
    variance = ((linearised - ac1) ** 2).sum() / (n * (n - 1))
    return ac1, pa, pe, float(math.sqrt(variance))


def _ac1_from_weights(patterns: np.ndarray, weights: np.ndarray, q: int) -> np.ndarray:
    """AC1 of each weighting of the unit patterns (same formulas as _ac1_terms), vectorized."""
    r = patterns.sum(axis=1).astype(float)
    rated_twice = (r >= 2).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        unit_pa = np.where(r >= 2, (patterns * (patterns - 1)).sum(axis=1) / (r * (r - 1)), 0.0)
        pa = (weights @ unit_pa) / (weights @ rated_twice)
    pi = (weights @ (patterns / r[:, None])) / weights.sum(axis=1)[:, None]
    pe = (pi * (1 - pi)).sum(axis=1) / (q - 1) if q >= 2 else np.zeros(len(weights))
    return (pa - pe) / (1 - pe)


# Bootstrap -------------------------------------------------------------------------------------------


def _bootstrap_interval(
    statistic: Callable[[np.ndarray, np.ndarray], np.ndarray],
    counts: np.ndarray,
    value: float,
    n_boot: int,
    seed: int,
    confidence: float,
) -> tuple[float, float]:
    """Percentile interval of the statistic over units resampled with replacement.

    Units with the same count row are interchangeable, so a resample is drawn as how many copies of
    each distinct row it holds, Multinomial(n, frequency / n): the same distribution as drawing n row
    indices, at a cost that depends on the (few) distinct rows. Resamples where the coefficient is
    undefined (say, one category only) are left out of the percentiles.
    """
    if n_boot <= 0 or math.isnan(value) or len(counts) == 0:
        return math.nan, math.nan
    patterns, frequency = _distinct_rows(counts)
    rng = np.random.default_rng(seed)
    draws = np.concatenate([statistic(patterns, weights) for weights in _resample(frequency, n_boot, rng)])
    draws = draws[np.isfinite(draws)]
    if not len(draws):
        return math.nan, math.nan
    tail = (1 - confidence) / 2
    low, high = np.quantile(draws, [tail, 1 - tail])
    return float(low), float(high)


def _distinct_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(counts, axis=0, return_counts=True), in the same (lexicographic) order, through one integer per
    row: unique along axis 0 sorts the rows as records, and on the ~86,000 KA units of UniSumEval scale that was most
    of the bootstrap's time. Counts are small non-negative integers, so a row read as digits in base max + 1, first
    column most significant, sorts as the row does."""
    base = int(counts.max()) + 1 if counts.size else 1
    width = counts.shape[1]
    if width == 0 or base ** width >= 2**62:
        return np.unique(counts, axis=0, return_counts=True)
    keys = counts.astype(np.int64) @ (base ** np.arange(width - 1, -1, -1, dtype=np.int64))
    _, first, frequency = np.unique(keys, return_index=True, return_counts=True)
    return counts[first], frequency


def _resample(frequency: np.ndarray, n_boot: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Yield (resamples x patterns) float weight matrices, n_boot rows in all, in bounded chunks."""
    n, n_patterns = int(frequency.sum()), len(frequency)
    # A multinomial draw costs about ten times more per pattern than an index draw per unit.
    by_pattern = n_patterns * 10 <= n
    chunk = max(1, _CHUNK_CELLS // (n_patterns if by_pattern else n))
    owner = None if by_pattern else np.repeat(np.arange(n_patterns), frequency)
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        if by_pattern:
            weights = rng.multinomial(n, frequency / n, size=size)
        else:
            picked = owner[rng.integers(0, n, size=(size, n))]
            picked += (np.arange(size) * n_patterns)[:, None]
            weights = np.bincount(picked.ravel(), minlength=size * n_patterns).reshape(size, n_patterns)
        yield weights.astype(float)
