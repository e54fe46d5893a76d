"""Agreement coefficients checked against published values.

Sources:
- Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability (repository.upenn.edu/asc_papers/43),
  section C, 4 observers x 12 units, nominal, missing data: alpha = 0.743 (= 113/152), with the
  coincidence matrix margins n_c = 9, 13, 10, 5, 3 (n = 40) and diagonal 7, 10, 8, 4, 3.
- irrCAC (Gwet, R package, github.com/kgwet/irrCAC, README "Computing agreement coefficients from raw
  ratings" and "...from the distribution of raters"): printed output of gwet.ac1.raw, krippen.alpha.raw,
  gwet.ac1.dist and krippen.alpha.dist on the datasets cac.raw4raters (from Gwet 2014, Handbook of
  Inter-Rater Reliability, 4th ed., p. 120), distrib.6raters (Fleiss 1971) and cac.dist4cat.
- afergadis/irrCAC (the Python port of irrCAC), test/unit/irrCAC/raw/test_gwet.py and test_krippendorff.py:
  values to 3 decimals for the datasets cac.raw5obser, cac.raw.g1g2, cac.raw.gender, cac.ben.gerry.
- Wikipedia, "Krippendorff's alpha", A computational example (3 coders x 15 units): nominal alpha =
  0.691; the krippendorff package's docstring gives 0.691358.
- Hayes, A. F. & Krippendorff, K. (2007), Communication Methods and Measures 1(1):77-89, example data
  (5 observers x 40 units): nominal alpha 0.4765 as asserted by prodigy-iaa's tests/test_measures.py and
  0.477 by Thomas Grill's implementation (quoted in raoulbia/nltk-krippendorff-validation); the same
  test module gives AC 0.5093 for these data.
"""

import math
import warnings

import numpy as np
import pytest

from exports.agreement import (
    AgreementEstimate,
    RatingCounts,
    ac1_with_interval,
    alpha_with_interval,
    gwet_ac1,
    krippendorff_alpha,
    rating_counts,
)

N = None

# Krippendorff (2011), section C: units are columns there, rows here (observers A, B, C, D).
KRIPPENDORFF_2011_C = [
    [1, 1, N, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
    [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [N, 5, 5, 5], [N, N, 1, 1], [N, 3, N, N],
]  # fmt: skip

# irrCAC's cac.raw4raters (Gwet 2014, p. 120): the same ratings, unit 12's single rating by rater 3.
CAC_RAW4RATERS = KRIPPENDORFF_2011_C[:11] + [[N, N, 3, N]]

# irrCAC's distrib.6raters: per unit, how many of 6 psychiatrists chose each of 5 diagnoses.
DISTRIB_6RATERS = [
    [0, 0, 0, 6, 0], [0, 3, 0, 0, 3], [0, 1, 4, 0, 1], [0, 0, 0, 0, 6], [0, 3, 0, 3, 0],
    [2, 0, 4, 0, 0], [0, 0, 4, 0, 2], [2, 0, 3, 1, 0], [2, 0, 0, 4, 0], [0, 0, 0, 0, 6],
    [1, 0, 0, 5, 0], [1, 1, 0, 4, 0], [0, 3, 3, 0, 0], [1, 0, 0, 5, 0], [0, 2, 0, 3, 1],
]  # fmt: skip

# irrCAC's cac.dist4cat, columns a, b, c (4 raters, 15 units).
DIST4CAT = [
    [3, 0, 1], [2, 1, 1], [2, 1, 1], [2, 0, 2], [3, 1, 0], [3, 1, 0], [0, 4, 0], [0, 3, 1],
    [0, 0, 4], [3, 1, 0], [0, 4, 0], [0, 3, 1], [0, 2, 2], [0, 0, 4], [3, 1, 0],
]  # fmt: skip

RAW5OBSERVERS = [
    [1, 1, 2, N, 2], [1, 1, 0, 1, N], [2, 3, 3, 3, N], [N, 0, 0, N, 0], [0, 0, 0, N, 0],
    [0, 0, 0, N, 0], [1, 0, 2, N, 1], [1, N, 2, 0, N], [2, 2, 2, N, 2], [2, 1, 1, 1, N],
    [N, 1, 0, 0, N], [0, 0, 0, 0, N], [1, 2, 2, 2, N], [3, 3, 2, 2, 3], [1, 1, 1, N, 1],
]  # fmt: skip

RAW_G1G2 = [
    ["a", "a", N, "a"], ["b", "b", "c", "b"], ["c", "c", "c", "c"], ["c", "c", "c", "c"],
    ["b", "b", "b", "b"], ["a", "b", "c", "d"], ["d", "d", "d", "d"], ["a", "a", "b", "a"],
    ["b", "b", "b", "b"], [N, "e", "e", "e"], [N, N, "a", "a"], [N, N, "c", N],
    ["b", "b", "c", "b"], ["b", "a", "c", "b"],
]  # fmt: skip

RAW_GENDER = list(
    zip(
        "a a a a a b b b c a a a a a b".split(),
        "a a a a b a b c c a a a a b a".split(),
        "a b b c a a b b c a b b c a a".split(),
        "c c c c a a b b c c c c c a a".split(),
    )
)

BEN_GERRY = list(
    zip(
        ["a", "a", "b", "b", "d", "c", "c", "c", "e", "d", "d", "a"],
        ["b", "a", "b", "b", "b", "c", "c", "c", "e", N, "d", "d"],
    )
)

# Wikipedia's computational example: 3 coders (rows there), 15 units.
WIKIPEDIA_CODERS = [
    [N, N, N, N, N, 3, 4, 1, 2, 1, 1, 3, 3, N, 3],
    [1, N, 2, 1, 3, 3, 4, 3, N, N, N, N, N, N, N],
    [N, N, 2, 1, 3, 4, 4, N, 2, 1, 1, 3, 3, N, 4],
]

# Hayes & Krippendorff (2007), 40 units x 5 observers.
HAYES_KRIPPENDORFF_2007 = [
    [1, 1, 2, N, 2], [1, 1, 0, 1, N], [2, 3, 3, 3, N], [N, 0, 0, N, 0], [0, 0, 0, N, 0],
    [0, 0, 0, N, 0], [1, 0, 2, N, 1], [1, N, 2, 0, N], [2, 2, 2, N, 2], [2, 1, 1, 1, N],
    [N, 1, 0, 0, N], [0, 0, 0, 0, N], [1, 2, 2, 2, N], [3, 3, 2, 2, 3], [1, 1, 1, N, 1],
    [1, 1, 1, N, 1], [2, 1, 2, N, 2], [1, 2, 3, 3, N], [1, 1, 0, 1, N], [0, 0, 0, N, 0],
    [0, 0, 1, 1, N], [0, 0, N, 0, 0], [2, 3, 3, 3, N], [0, 0, 0, 0, N], [1, 2, N, 2, 2],
    [0, 1, 1, 1, N], [0, 0, 0, 1, 0], [1, 2, 1, 2, N], [1, 1, 2, 2, N], [1, 1, 2, N, 2],
    [1, 1, 0, N, 0], [2, 1, 2, 1, N], [2, 2, N, 2, 2], [3, 2, 2, 2, N], [2, 2, 2, N, 2],
    [2, 2, 3, N, 2], [2, 2, 2, N, 2], [2, 2, N, 1, 2], [2, 2, 2, 2, N], [1, 1, 1, N, 1],
]  # fmt: skip


def units_from_distribution(rows: list[list[int]]) -> list[list[int]]:
    """Turn 'raters per category' rows back into one label per rater."""
    return [[category for category, count in enumerate(row) for _ in range(count)] for row in rows]


def test_krippendorff_2011_section_c_alpha():
    assert krippendorff_alpha(KRIPPENDORFF_2011_C) == pytest.approx(113 / 152, abs=1e-12)
    assert round(krippendorff_alpha(KRIPPENDORFF_2011_C), 3) == 0.743


def test_krippendorff_2011_section_c_terms_and_counts():
    estimate = alpha_with_interval(KRIPPENDORFF_2011_C, n_boot=0)
    # Published coincidence matrix: diagonal 7 + 10 + 8 + 4 + 3 = 32 of n = 40 pairable values, so
    # A_o = 0.8; margins 9, 13, 10, 5, 3 give A_e = (72 + 156 + 90 + 20 + 6) / (40 * 39) = 344 / 1560.
    assert estimate.observed_agreement == pytest.approx(32 / 40)
    assert estimate.chance_agreement == pytest.approx(344 / 1560)
    assert estimate.n_units == 11  # unit 12 has one value: not pairable.
    assert estimate.n_ratings == 41
    counts = rating_counts(KRIPPENDORFF_2011_C).counts
    assert counts[counts.sum(axis=1) >= 2].sum(axis=0).tolist() == [9, 13, 10, 5, 3]


def test_irrcac_raw4raters_ac1_and_standard_error():
    # irrCAC README: gwet.ac1.raw(cac.raw4raters)$est -> pa 0.8181818, pe 0.1903212, coeff.val 0.77544,
    # coeff.se 0.14295, tot.obs 41.
    estimate = ac1_with_interval(CAC_RAW4RATERS, n_boot=0)
    assert estimate.value == pytest.approx(0.77544, abs=5e-6)
    assert estimate.observed_agreement == pytest.approx(0.8181818, abs=5e-8)
    assert estimate.chance_agreement == pytest.approx(0.1903212, abs=5e-8)
    assert estimate.standard_error == pytest.approx(0.14295, abs=5e-6)
    assert estimate.n_ratings == 41
    assert gwet_ac1(CAC_RAW4RATERS) == pytest.approx(0.77544, abs=5e-6)


def test_irrcac_raw4raters_alpha():
    # irrCAC README: krippen.alpha.raw(cac.raw4raters) -> coeff.val 0.74342.
    assert krippendorff_alpha(CAC_RAW4RATERS) == pytest.approx(0.74342, abs=5e-6)


def test_irrcac_distrib_6raters():
    # irrCAC README: gwet.ac1.dist(distrib.6raters) -> coeff 0.4448007, stderr 0.08418757,
    # pa 0.5511111, pe 0.1914815; krippen.alpha.dist(distrib.6raters) -> coeff 0.4204384.
    units = units_from_distribution(DISTRIB_6RATERS)
    estimate = ac1_with_interval(units, n_boot=0)
    assert estimate.value == pytest.approx(0.4448007, abs=5e-8)
    assert estimate.standard_error == pytest.approx(0.08418757, abs=5e-9)
    assert estimate.observed_agreement == pytest.approx(0.5511111, abs=5e-8)
    assert estimate.chance_agreement == pytest.approx(0.1914815, abs=5e-8)
    assert krippendorff_alpha(units) == pytest.approx(0.4204384, abs=5e-8)


def test_irrcac_dist4cat_ac1():
    # irrCAC README: gwet.ac1.dist(cac.dist4cat[,2:4])$coeff -> 0.3518903.
    assert gwet_ac1(units_from_distribution(DIST4CAT)) == pytest.approx(0.3518903, abs=5e-8)


@pytest.mark.parametrize(
    ("units", "ac1", "se", "alpha"),
    [
        (RAW5OBSERVERS, 0.497, 0.122, 0.481),
        (RAW_G1G2, 0.685, 0.134, 0.632),
        (RAW_GENDER, 0.208, 0.091, 0.143),
        (BEN_GERRY, 0.661, 0.184, 0.665),
    ],
    ids=["raw5obser", "raw.g1g2", "raw.gender", "ben.gerry"],
)
def test_irrcac_python_port_datasets(units, ac1, se, alpha):
    estimate = ac1_with_interval(units, n_boot=0)
    assert round(estimate.value, 3) == ac1
    assert round(estimate.standard_error, 3) == se
    assert round(krippendorff_alpha(units), 3) == alpha


def test_wikipedia_computational_example():
    units = [list(unit) for unit in zip(*WIKIPEDIA_CODERS)]
    assert krippendorff_alpha(units) == pytest.approx(0.691358, abs=5e-7)


def test_hayes_krippendorff_2007_nominal():
    assert krippendorff_alpha(HAYES_KRIPPENDORFF_2007) == pytest.approx(0.4765, abs=5e-5)
    assert gwet_ac1(HAYES_KRIPPENDORFF_2007) == pytest.approx(0.5093, abs=5e-5)


def test_numpy_array_input_matches_rows():
    array = np.array([[np.nan if label is None else label for label in unit] for unit in CAC_RAW4RATERS])
    assert krippendorff_alpha(array) == pytest.approx(0.74342, abs=5e-6)
    assert gwet_ac1(array) == pytest.approx(0.77544, abs=5e-6)


def test_rows_of_different_lengths():
    ragged = [[label for label in unit if label is not None] for unit in CAC_RAW4RATERS]
    assert krippendorff_alpha(ragged) == pytest.approx(113 / 152)
    assert gwet_ac1(ragged) == pytest.approx(0.77544, abs=5e-6)


def test_bool_and_string_labels_give_the_same_coefficients():
    booleans = [[True, True, False], [False, False, None], [True, True, True], [False, True, None]]
    strings = [[{True: "yes", False: "no", None: None}[label] for label in unit] for unit in booleans]
    assert krippendorff_alpha(booleans) == pytest.approx(krippendorff_alpha(strings))
    assert gwet_ac1(booleans) == pytest.approx(gwet_ac1(strings))
    # By hand, alpha: pairable values n = 10 (6 True, 4 False); within-unit matches sum_c o_cc =
    # 2/2 (unit 1: the True pair over m - 1 = 2) + 2 (unit 2) + 6/2 (unit 3) + 0 = 6, so
    # alpha = 1 - 9 * (10 - 6) / (100 - 36 - 16) = 1 - 36/48 = 0.25.
    assert krippendorff_alpha(booleans) == pytest.approx(0.25)
    # AC1: p_a = (2/6 + 1 + 1 + 0) / 4 = 7/12; pi_True = (2/3 + 0 + 1 + 1/2) / 4 = 13/24;
    # p_e = 2 * 13/24 * 11/24 = 286/576; AC1 = (7/12 - 286/576) / (1 - 286/576) = 50/290.
    assert gwet_ac1(booleans) == pytest.approx(50 / 290)


def test_single_rating_units_are_ignored_by_alpha_but_count_in_ac1_chance_term():
    base = [[True, True], [False, False], [True, False]]
    padded = base + [[True], [None, False], [None, None], []]
    assert krippendorff_alpha(padded) == krippendorff_alpha(base)
    # Gwet's pi_k averages over every rated unit, p_a only over units rated twice or more:
    # base: p_a = 2/3, pi = (1/2, 1/2), p_e = 1/2, AC1 = (2/3 - 1/2) / (1/2) = 1/3.
    assert gwet_ac1(base) == pytest.approx(1 / 3)
    # padded (5 rated units): pi_True = (1 + 0 + 1/2 + 1 + 0) / 5 = 1/2: p_e and AC1 unchanged here.
    assert gwet_ac1(padded) == pytest.approx(1 / 3)
    # With two extra single True ratings pi_True = (1 + 0 + 1/2 + 1 + 1) / 5 = 0.7, p_e = 2 * 0.7 * 0.3
    # = 0.42, AC1 = (2/3 - 0.42) / 0.58.
    assert gwet_ac1(base + [[True], [True, None]]) == pytest.approx((2 / 3 - 0.42) / 0.58)
    assert alpha_with_interval(padded, n_boot=0).n_units == 3


def test_no_unit_with_two_ratings_is_nan():
    units = [[True, None], [None, False], [True]]
    assert math.isnan(krippendorff_alpha(units))
    assert math.isnan(gwet_ac1(units))
    assert math.isnan(krippendorff_alpha([]))
    assert math.isnan(gwet_ac1([]))
    estimate = ac1_with_interval(units)
    assert math.isnan(estimate.value) and math.isnan(estimate.ci_low) and estimate.n_units == 0


def test_single_category_alpha_nan_and_ac1_one():
    units = [[True, True, True], [True, True, None], [True, True, True]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # D_e = 0: alpha = 1 - D_o / D_e is 0/0.
        assert math.isnan(krippendorff_alpha(units))
        # p_a = 1, every pi but one is 0 so p_e = 0: AC1 = 1 (q = 2 declared, or q = 1 as irrCAC does).
        assert gwet_ac1(units) == 1.0
        assert gwet_ac1(units, categories=[True, False]) == 1.0


def test_perfect_disagreement():
    # 10 units, 2 raters, always (True, False). Alpha: n = 20, n_c = 10 each, sum_c o_cc = 0:
    # alpha = 1 - 19 * 20 / (400 - 200) = -0.9. AC1: p_a = 0, pi = (1/2, 1/2), p_e = 1/2: AC1 = -1.
    units = [[True, False]] * 10
    assert krippendorff_alpha(units) == pytest.approx(-0.9)
    assert gwet_ac1(units) == pytest.approx(-1.0)


def test_high_agreement_low_alpha_paradox():
    # The kappa paradox (Feinstein & Cicchetti 1990), for which Gwet (2008) designed AC1: 100 units, 2
    # raters, 95 agree on False, 5 split. Percent agreement 0.95. Alpha: n = 200, n_False = 195,
    # n_True = 5, sum_c o_cc = 190: alpha = 1 - 199 * 10 / (40000 - 38025 - 25) = 1 - 1990/1950 = -0.0205.
    # AC1: pi_True = 2.5/100 = 0.025, p_e = 2 * 0.025 * 0.975 = 0.04875,
    # AC1 = (0.95 - 0.04875) / 0.95125 = 0.947438.
    units = [[False, False]] * 95 + [[True, False]] * 5
    assert krippendorff_alpha(units) == pytest.approx(1 - 1990 / 1950)
    assert gwet_ac1(units) == pytest.approx(0.90125 / 0.95125)
    estimate = ac1_with_interval(units, n_boot=0)
    assert estimate.observed_agreement == pytest.approx(0.95)
    assert krippendorff_alpha(units) < 0.1 < 0.9 < gwet_ac1(units)


def test_declared_categories():
    units = [[1, 1], [2, 2], [1, 2]]
    # q = 2 observed: pi = (1/2, 1/2), p_e = 1/2, p_a = 2/3 -> 1/3. With q = 3 declared:
    # p_e = (1/4 + 1/4 + 0) / 2 = 1/4 -> (2/3 - 1/4) / (3/4) = 5/9 (irrCAC's categ.labels).
    assert gwet_ac1(units) == pytest.approx(1 / 3)
    assert gwet_ac1(units, categories=[1, 2, 3]) == pytest.approx(5 / 9)
    assert gwet_ac1(rating_counts(units), categories=[1, 2, 3]) == pytest.approx(5 / 9)
    assert gwet_ac1(np.array(units, dtype=float), categories=[1, 2, 3]) == pytest.approx(5 / 9)
    with pytest.raises(ValueError, match="outside the declared categories"):
        gwet_ac1(units, categories=[1, 3])


def test_rating_counts_are_reused_and_sorted():
    counts = rating_counts([["b", "a", None], ["a", "a", "c"], [None, None]])
    assert isinstance(counts, RatingCounts)
    assert counts.categories == ("a", "b", "c")
    assert counts.counts.tolist() == [[1, 1, 0], [2, 0, 1]]  # The unrated unit is dropped.
    assert rating_counts(counts) is counts
    assert krippendorff_alpha(counts) == krippendorff_alpha([["b", "a", None], ["a", "a", "c"]])


def test_bootstrap_interval_is_reproducible_and_brackets_the_value():
    first = alpha_with_interval(HAYES_KRIPPENDORFF_2007, n_boot=500, seed=7)
    second = alpha_with_interval(HAYES_KRIPPENDORFF_2007, n_boot=500, seed=7)
    assert first == second
    assert first.ci_low < first.value < first.ci_high
    other = alpha_with_interval(HAYES_KRIPPENDORFF_2007, n_boot=500, seed=8)
    assert (other.ci_low, other.ci_high) != (first.ci_low, first.ci_high)
    ac1 = ac1_with_interval(HAYES_KRIPPENDORFF_2007, n_boot=500, seed=7)
    assert ac1.ci_low < ac1.value < ac1.ci_high


def test_bootstrap_of_identical_units_has_no_spread():
    units = [[True, True, False]] * 50
    estimate = ac1_with_interval(units, n_boot=200)
    # Every resample is the data itself: p_a = 1/3, pi_True = 2/3, p_e = 4/9, AC1 = (1/3 - 4/9) / (5/9).
    assert estimate.ci_low == pytest.approx(-0.2) and estimate.ci_high == pytest.approx(-0.2)


def test_large_bootstrap_is_fast_and_matches_the_package():
    rng = np.random.default_rng(0)
    labels = rng.random((100_000, 3)) < 0.9
    units = [[bool(label) for label in row] for row in labels]
    counts = rating_counts(units)
    alpha = alpha_with_interval(counts, n_boot=1000, seed=0)
    ac1 = ac1_with_interval(counts, n_boot=1000, seed=0)
    assert alpha.value == pytest.approx(krippendorff_alpha(units))
    assert alpha.ci_low < alpha.value < alpha.ci_high
    assert ac1.ci_low < ac1.value < ac1.ci_high
    assert alpha.n_units == 100_000 and alpha.n_ratings == 300_000


def test_as_dict_is_json_ready():
    data = ac1_with_interval([[True], [False]]).as_dict()
    assert data["value"] is None and data["coefficient"] == "gwet_ac1"
    assert isinstance(ac1_with_interval(CAC_RAW4RATERS, n_boot=0), AgreementEstimate)
