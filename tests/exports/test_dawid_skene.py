"""Dawid-Skene EM checked by hand, against majority vote, and against crowd-kit's implementation.

Sources:
- Dawid, A. P. & Skene, A. M. (1979), "Maximum likelihood estimation of observer error-rates using the EM
  algorithm", Applied Statistics 28(1):20-28: the M-step and E-step written out in `test_one_iteration_by_hand`.
- crowd-kit 1.4.2 (Toloka, Apache-2.0), crowdkit.aggregation.DawidSkene, run once outside the project (it needs
  transformers and nltk) on `simulated()` below with pandas 3.1.1 and numpy 2.4.6: its numbers are copied into
  `test_crowd_kit_dawid_skene`. It starts from the same majority-vote shares with priors = mean posterior; it floors
  confusion entries at 1e-10 where we add a pseudo-count, so we compare with smoothing=1e-10 and a fixed number of
  iterations (crowd-kit with tol=-inf never stops early).
"""

import math
import random

import numpy as np
import pytest

from exports.dawid_skene import dawid_skene, dawid_skene_codes, majority_differs_share
from exports.scores import TIE_BREAK, majority_vote

# Three units, three annotators, binary. Majority shares P(True): u1 3/3, u2 2/3, u3 1/3.
HAND = [
    ("u1", "a", True), ("u1", "b", True), ("u1", "c", True),
    ("u2", "a", True), ("u2", "b", True), ("u2", "c", False),
    ("u3", "a", False), ("u3", "b", True), ("u3", "c", False),
]  # fmt: skip


def simulated(seed=0, n_units=500):
    """Units True with probability 0.3; an expert right 95% of the time, a fair annotator 75%, a spammer 50%.

    Python's `random` so that the data do not depend on NumPy's generator streams.
    """
    rng = random.Random(seed)
    accuracy = {"expert": 0.95, "fair": 0.75, "spammer": 0.5}
    truth, labels = {}, []
    for unit in range(n_units):
        true = rng.random() < 0.3
        truth[unit] = true
        for annotator, share_right in accuracy.items():
            labels.append((unit, annotator, true if rng.random() < share_right else not true))
    return truth, labels


def majority_labels(labels, on_tie=None):
    votes = {}
    for unit, _annotator, label in labels:
        votes.setdefault(unit, []).append(label)
    return {unit: majority_vote(unit_votes, on_tie=on_tie) for unit, unit_votes in votes.items()}


def test_majority_start_and_its_m_step():
    # Confusion rows are the true class (False, True), columns the label given; s = 0.01 is added to every count.
    # Annotator a said T, T, F on u1..u3. True-False mass: u1 0, u2 1/3, u3 2/3, so it said F with mass 2/3 (u3)
    # and T with 1/3 (u2): row False = (2/3 + s, 1/3 + s) / (1 + 2s). True mass 1, 2/3, 1/3: row True =
    # (1/3 + s, 5/3 + s) / (2 + 2s). b always said T; c said T, F, F.
    s = 0.01
    result = dawid_skene(HAND, max_iterations=0)
    assert result.iterations == 0
    assert result.posteriors[:, 1].tolist() == pytest.approx([1, 2 / 3, 1 / 3], abs=1e-12)
    assert result.priors.tolist() == pytest.approx([1 / 3, 2 / 3], abs=1e-12)
    expected = {
        "a": [
            [(2 / 3 + s) / (1 + 2 * s), (1 / 3 + s) / (1 + 2 * s)],
            [(1 / 3 + s) / (2 + 2 * s), (5 / 3 + s) / (2 + 2 * s)],
        ],
        "b": [[s / (1 + 2 * s), (1 + s) / (1 + 2 * s)], [s / (2 + 2 * s), (2 + s) / (2 + 2 * s)]],
        "c": [[(1 + s) / (1 + 2 * s), s / (1 + 2 * s)], [(1 + s) / (2 + 2 * s), (1 + s) / (2 + 2 * s)]],
    }
    for annotator, matrix in expected.items():
        assert result.confusion_matrix(annotator) == pytest.approx(np.array(matrix), abs=1e-12)


def test_one_iteration_by_hand():
    # E-step with the priors (1/3, 2/3) and the confusion matrices of the test above, s = 0.01:
    # u1 (a T, b T, c T):  F: 1/3 * (1/3+s)/(1+2s) * (1+s)/(1+2s) * s/(1+2s)     = 0.0010892199...
    #                      T: 2/3 * (5/3+s)/(2+2s) * (2+s)/(2+2s) * (1+s)/(2+2s) = 0.2753079763...
    # u2 (a T, b T, c F):  F: 1/3 * (1/3+s)/(1+2s) * (1+s)/(1+2s) * (1+s)/(1+2s) = 0.1100112115...
    #                      T: the same as u1's, since c's row True is (1/2, 1/2)    = 0.2753079763...
    # u3 (a F, b T, c F):  F: 1/3 * (2/3+s)/(1+2s) * (1+s)/(1+2s) * (1+s)/(1+2s) = 0.2168182130...
    #                      T: 2/3 * (1/3+s)/(2+2s) * (2+s)/(2+2s) * (1+s)/(2+2s) = 0.0563751919...
    # P(True) = T / (F + T): u1 0.99605922226..., u2 0.71449329542..., u3 0.20635634294...
    s = 0.01
    f, t = 1 + 2 * s, 2 + 2 * s
    u1_false = 1 / 3 * (1 / 3 + s) / f * (1 + s) / f * s / f
    u1_true = 2 / 3 * (5 / 3 + s) / t * (2 + s) / t * (1 + s) / t
    u2_false = 1 / 3 * (1 / 3 + s) / f * (1 + s) / f * (1 + s) / f
    u3_false = 1 / 3 * (2 / 3 + s) / f * (1 + s) / f * (1 + s) / f
    u3_true = 2 / 3 * (1 / 3 + s) / t * (2 + s) / t * (1 + s) / t

    result = dawid_skene(HAND, max_iterations=1)

    assert result.iterations == 1
    assert not result.converged
    assert result.posterior("u1")[True] == pytest.approx(u1_true / (u1_false + u1_true), abs=1e-9)
    assert result.posterior("u2")[True] == pytest.approx(u1_true / (u2_false + u1_true), abs=1e-9)
    assert result.posterior("u3")[True] == pytest.approx(u3_true / (u3_false + u3_true), abs=1e-9)
    assert [result.posterior(unit)[True] for unit in ("u1", "u2", "u3")] == pytest.approx(
        [0.996059222267811, 0.7144932954263543, 0.20635634294290106], abs=1e-9
    )
    assert result.labels == {"u1": True, "u2": True, "u3": False}
    assert result.priors.sum() == pytest.approx(1)


def test_unanimous_units_give_the_majority_label():
    labels = [
        (unit, annotator, label)
        for unit, (annotators, label) in enumerate(
            [("abc", True), ("abd", False), ("bcd", False), ("ab", True), ("cd", True), ("acd", False), ("d", True)]
        )
        for annotator in annotators
    ]

    result = dawid_skene(labels)

    assert result.converged
    assert result.labels == majority_labels(labels)
    assert all(max(result.posterior(unit).values()) > 0.99 for unit in result.units)
    assert majority_differs_share(result, labels, on_tie=TIE_BREAK["fv"]) == 0


def test_spammer_is_down_weighted_and_truth_recovered_better_than_majority():
    truth, labels = simulated()

    result = dawid_skene(labels)

    majority = majority_labels(labels)
    majority_accuracy = sum(majority[unit] == true for unit, true in truth.items()) / len(truth)
    ds_accuracy = sum(result.labels[unit] == true for unit, true in truth.items()) / len(truth)
    assert ds_accuracy > majority_accuracy  # 0.936 against 0.826 on this seed
    assert result.sensitivity("spammer") == pytest.approx(0.5, abs=0.1)
    assert result.specificity("spammer") == pytest.approx(0.5, abs=0.1)

    def informedness(annotator):  # Youden's J: 0 for a coin, 1 for a perfect annotator.
        return result.sensitivity(annotator) + result.specificity(annotator) - 1

    assert informedness("spammer") < 0.1
    assert informedness("expert") > 0.5
    assert informedness("fair") > 0.5
    assert majority_differs_share(result, labels, on_tie=None) == pytest.approx(
        sum(result.labels[unit] != majority[unit] for unit in truth) / len(truth)
    )


@pytest.mark.parametrize(
    "iterations, p_true, priors, spammer",
    [
        (
            1,
            [0.06086951377613354, 0.3198904636453733, 0.6809502085063952, 0.9441456357058453, 0.9441456357058453,
             0.6809502085063952],
            [0.6003874086288876, 0.3996125913711124],
            [[0.5888341500859944, 0.4111658499140056], [0.3465140826583232, 0.6534859173416768]],
        ),
        (
            100,
            [0.05984595172499162, 0.46507635211243964, 0.4992044903097521, 0.9689721253640193, 0.9689721253640193,
             0.4992044903097521],
            [0.6076485610301107, 0.39235143896988944],
            [[0.5054097535824811, 0.4945902464175188], [0.4712318399811236, 0.5287681600188763]],
        ),
    ],
)  # fmt: skip
def test_crowd_kit_dawid_skene(iterations, p_true, priors, spammer):
    # crowd-kit 1.4.2: DawidSkene(n_iter=iterations, tol=-inf).fit_predict_proba on simulated(); the first six
    # units' P(True), `priors_`, and the spammer's `errors_` (indexed there by label given, columns the true class;
    # transposed here to our rows = true class).
    _truth, labels = simulated()

    result = dawid_skene(labels, smoothing=1e-10, max_iterations=iterations, tolerance=0)

    assert result.iterations == iterations
    assert [result.posterior(unit)[True] for unit in range(6)] == pytest.approx(p_true, abs=1e-9)
    assert result.priors.tolist() == pytest.approx(priors, abs=1e-9)
    assert result.confusion_matrix("spammer") == pytest.approx(np.array(spammer), abs=1e-9)


def test_a_tie_goes_to_on_tie_else_to_the_first_class():
    # Two annotators who always disagree: every posterior is exactly 1/2.
    labels = [("u1", "a", True), ("u1", "b", False), ("u2", "a", False), ("u2", "b", True)]

    assert dawid_skene(labels).labels == {"u1": False, "u2": False}
    assert dawid_skene(labels, on_tie=True).labels == {"u1": True, "u2": True}
    assert dawid_skene(labels, classes=(True, False)).labels == {"u1": True, "u2": True}
    assert majority_differs_share(dawid_skene(labels, on_tie=True), labels, on_tie=True) == 0
    assert majority_differs_share(dawid_skene(labels), labels, on_tie=True) == 1
    assert math.isnan(majority_differs_share(dawid_skene(labels), labels, on_tie=None))


def test_declared_classes_and_string_labels():
    labels = [(1, "a", "yes"), (1, "b", "yes"), (2, "a", "no"), (2, "b", "no")]

    result = dawid_skene(labels, classes=("no", "yes", "unsure"))

    assert result.classes == ("no", "yes", "unsure")
    assert result.labels == {1: "yes", 2: "no"}
    assert result.posterior(1)["unsure"] == 0  # Nobody said it, so its prior is 0.
    with pytest.raises(ValueError, match="two classes"):
        result.sensitivity("a", positive="yes")
    with pytest.raises(ValueError, match="outside the declared classes"):
        dawid_skene(labels, classes=("no",))


def test_smoothing_must_be_positive():
    with pytest.raises(ValueError, match="smoothing must be positive"):
        dawid_skene(HAND, smoothing=0)


def test_coded_labels_give_what_the_triples_give():
    # The same labels as integer codes (what exports.second_opinion reads from the database): the same EM.
    _truth, labels = simulated()
    names = {"expert": 0, "fair": 1, "spammer": 2}
    unit = np.array([u for u, _, _ in labels])
    annotator = np.array([names[a] for _, a, _ in labels])
    label = np.array([int(value) for _, _, value in labels])

    coded = dawid_skene_codes(unit, annotator, label, classes=(False, True), on_tie=True)
    triples = dawid_skene(labels, classes=(False, True), on_tie=True)

    assert (coded.iterations, coded.converged) == (triples.iterations, triples.converged)
    assert np.array_equal(coded.posteriors, triples.posteriors) and np.array_equal(coded.confusion, triples.confusion)
    assert coded.labels == triples.labels and list(coded.units) == list(range(500))
    assert coded.sensitivity(names["spammer"]) == triples.sensitivity("spammer")


def test_coded_labels_must_be_dense():
    with pytest.raises(ValueError, match="each with a label"):
        dawid_skene_codes([0, 2], [0, 0], [1, 0], classes=(False, True))  # unit 1 has no label
    with pytest.raises(ValueError, match="outside"):
        dawid_skene_codes([0, 1], [0, 0], [1, 2], classes=(False, True))
