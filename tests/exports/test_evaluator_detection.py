"""The evaluator benchmark as the papers report it, checked against SciPy and scikit-learn on hand-made data.

Summary level (FineSurE D, UniSumEval D.2): Pearson and Spearman over summaries, Spearman over summarizer means,
per domain and per source dataset, with ties. Sentence level (SBERTScore paper 4.2, 5.6): a threshold chosen on a
validation split of the documents, balanced accuracy, ROC-AUC and confusion matrix on the test split, AND/OR.
"""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import balanced_accuracy_score, confusion_matrix, roc_auc_score

from exports.evaluator_benchmark import (
    DocumentSplit,
    SentenceScore,
    benchmark_evaluator,
    choose_threshold,
    combined_detection,
    error_detection,
    split_documents,
)

# Nine summaries of three summarizers; the news domain gathers two source datasets, the sport domain one.
# Both score columns contain ties.
SUMMARIES = [
    # uid, model, domain, source, human, evaluator
    ("d1", "a", "news", "CNN/DM", 1.0, 0.90), ("d1", "b", "news", "CNN/DM", 0.5, 0.70),
    ("d1", "c", "news", "CNN/DM", 0.5, 0.70),
    ("d2", "a", "news", "XSum", 0.75, 0.80), ("d2", "b", "news", "XSum", 1.0, 0.60),
    ("d2", "c", "news", "XSum", 0.25, 0.30),
    ("d3", "a", "sport", "SportsWire", 0.8, 0.85), ("d3", "b", "sport", "SportsWire", 0.6, 0.85),
    ("d3", "c", "sport", "SportsWire", 0.2, 0.40),
]
ROWS = [dict(zip(("uid", "model", "domain", "source", "human", "evaluator"), row)) for row in SUMMARIES]


def scipy_levels(rows):
    human, machine = [r["human"] for r in rows], [r["evaluator"] for r in rows]
    models = sorted({r["model"] for r in rows})
    means = [(np.mean([r["human"] for r in rows if r["model"] == m]),
              np.mean([r["evaluator"] for r in rows if r["model"] == m])) for m in models]
    return stats.pearsonr(human, machine), stats.spearmanr(human, machine), stats.spearmanr(*zip(*means))


def assert_levels(levels, rows):
    pearson, spearman, system = scipy_levels(rows)
    assert levels.summary_level.statistic == pytest.approx(pearson.statistic)
    assert levels.summary_level.p_value == pytest.approx(pearson.pvalue)
    assert levels.summary_level_spearman.statistic == pytest.approx(spearman.statistic)
    assert levels.summary_level_spearman.p_value == pytest.approx(spearman.pvalue)
    assert levels.system_level.statistic == pytest.approx(system.statistic)
    assert levels.system_level.p_value == pytest.approx(system.pvalue)
    assert levels.summary_level.n == levels.summary_level_spearman.n == len(rows)


def test_it_reports_pearson_and_spearman_over_summaries_and_spearman_over_systems_as_scipy_does():
    result = benchmark_evaluator(ROWS)

    assert_levels(result.overall, ROWS)
    # Ties are ranked by their mean rank: the 0.5 humans of d1 and the 0.85 evaluators of d3.
    assert result.overall.summary_level_spearman.statistic == pytest.approx(
        np.corrcoef(stats.rankdata([r["human"] for r in ROWS]), stats.rankdata([r["evaluator"] for r in ROWS]))[0, 1])
    interval = stats.pearsonr([r["human"] for r in ROWS], [r["evaluator"] for r in ROWS]).confidence_interval(0.95)
    assert (result.overall.summary_level.ci_low, result.overall.summary_level.ci_high) == pytest.approx(
        (interval.low, interval.high))


def test_a_domain_with_two_sources_is_reported_per_domain_and_per_source():
    result = benchmark_evaluator(ROWS)

    assert list(result.by_domain) == ["news", "sport"]
    assert list(result.by_source) == ["CNN/DM", "SportsWire", "XSum"]
    assert_levels(result.by_domain["news"], [r for r in ROWS if r["domain"] == "news"])
    assert_levels(result.by_source["XSum"], [r for r in ROWS if r["source"] == "XSum"])
    assert result.by_domain["news"].summary_level.n == 6
    assert result.by_source["CNN/DM"].summary_level.n == 3
    # The news domain is not any of its sources: its correlation differs from both.
    assert result.by_domain["news"].summary_level.statistic != pytest.approx(
        result.by_source["CNN/DM"].summary_level.statistic)
    assert result.by_domain["news"].summary_level.statistic != pytest.approx(
        result.by_source["XSum"].summary_level.statistic)
    # One source, one domain: the same numbers.
    assert result.by_source["SportsWire"] == result.by_domain["sport"]


def test_system_level_ranks_tied_summarizer_means_as_scipy_does():
    rows = [{"model": m, "human": h, "evaluator": e} for m, h, e in
            [("a", 0.5, 0.2), ("a", 0.5, 0.4), ("b", 0.5, 0.3), ("b", 0.5, 0.3), ("c", 0.9, 0.9), ("c", 0.7, 0.1),
             ("d", 0.1, 0.6), ("d", 0.3, 0.6)]]
    # Means: human a 0.5, b 0.5, c 0.8, d 0.2 (a tie); evaluator a 0.3, b 0.3, c 0.5, d 0.6 (a tie).
    result = benchmark_evaluator(rows)

    expected = stats.spearmanr([0.5, 0.5, 0.8, 0.2], [0.3, 0.3, 0.5, 0.6])
    assert result.overall.system_level.statistic == pytest.approx(expected.statistic)
    assert result.overall.system_level.p_value == pytest.approx(expected.pvalue)
    assert result.overall.system_level.n == 4


def test_the_documents_split_in_two_seeded_halves():
    documents = [f"doc-{i}" for i in range(9)]

    split = split_documents(documents * 2)  # repeated keys count once

    assert len(split.validation) == 5 and len(split.test) == 4
    assert split.validation | split.test == set(documents) and not split.validation & split.test
    assert split_documents(reversed(documents)) == split  # the order given does not matter
    assert split_documents(documents, seed=1) != split
    assert "seed 0" in split.describe() and "5 for validation" in split.describe()


def brute_force_threshold(scores, errors):
    """Every midpoint between distinct scores, balanced accuracy by scikit-learn; the first best one."""
    distinct = sorted(set(scores))
    best = None
    for low, high in zip(distinct, distinct[1:]):
        threshold = (low + high) / 2
        accuracy = balanced_accuracy_score(errors, [s < threshold for s in scores])
        if best is None or accuracy > best[1]:
            best = (threshold, accuracy)
    return best


def test_the_threshold_maximises_balanced_accuracy_on_the_validation_scores():
    # Tied scores (0.4 twice, 0.9 three times) and an imbalanced truth, as in real labels.
    scores = [0.1, 0.4, 0.4, 0.5, 0.7, 0.9, 0.9, 0.9, 0.95, 0.3]
    errors = [True, True, False, True, False, False, False, True, False, False]

    threshold, accuracy = choose_threshold(scores, errors)

    assert (threshold, accuracy) == pytest.approx(brute_force_threshold(scores, errors))
    # By hand: flagging below 0.6 catches 3 of 4 errors and wrongly flags 2 of 6 correct sentences.
    assert threshold == pytest.approx(0.6)
    assert accuracy == pytest.approx((3 / 4 + 4 / 6) / 2)


def test_on_a_tie_the_lowest_threshold_wins_and_nothing_is_chosen_without_both_classes():
    # Below 0.25 or below 0.75: both give balanced accuracy 0.75.
    assert choose_threshold([0.0, 0.5, 1.0, 1.0], [True, False, True, False]) == (pytest.approx(0.25), 0.75)
    assert all(math.isnan(v) for v in choose_threshold([0.2, 0.4], [False, False]))
    assert all(math.isnan(v) for v in choose_threshold([0.3, 0.3], [True, False]))


def sentences(rows):
    return [SentenceScore(document=d, key=k, score=s, error=e) for d, k, s, e in rows]


VALIDATION = [("v1", 1, 0.2, True), ("v1", 2, 0.9, False), ("v2", 3, 0.5, True), ("v2", 4, 0.6, False),
              ("v2", 5, 0.8, False)]
TEST = [("t1", 6, 0.3, True), ("t1", 7, 0.55, True), ("t1", 8, 0.55, False), ("t2", 9, 0.7, False),
        ("t2", 10, 0.56, False), ("t2", 11, 0.9, True), ("t3", 12, 0.1, False)]
SPLIT = DocumentSplit(seed=0, validation=frozenset({"v1", "v2"}), test=frozenset({"t1", "t2", "t3"}))


def test_error_detection_reports_the_test_half_at_the_validation_threshold_as_scikit_learn_does():
    result = error_detection(sentences(VALIDATION + TEST), SPLIT)

    # Validation: flagging below 0.55 separates the classes perfectly.
    assert result.threshold == pytest.approx(0.55)
    assert result.validation_balanced_accuracy == 1.0
    truth = [e for _, _, _, e in TEST]
    scores = [s for _, _, s, _ in TEST]
    flagged = [s < 0.55 for s in scores]  # the tied 0.55 pair is not flagged
    assert result.balanced_accuracy == pytest.approx(balanced_accuracy_score(truth, flagged))
    assert result.roc_auc == pytest.approx(roc_auc_score(truth, [-s for s in scores]))
    tn, fp, fn, tp = confusion_matrix(truth, flagged, labels=[False, True]).ravel()
    assert (result.tn, result.fp, result.fn, result.tp) == (tn, fp, fn, tp) == (3, 1, 2, 1)
    assert result.balanced_accuracy == pytest.approx((1 / 3 + 3 / 4) / 2)
    assert (result.n_validation, result.n_test) == (5, 7)
    assert result.roc[0] == (0.0, 0.0) and result.roc[-1] == (1.0, 1.0)


def test_error_detection_is_undefined_with_a_reason_when_a_half_lacks_a_class():
    only_correct = [row for row in TEST if not row[3]]

    result = error_detection(sentences(VALIDATION + only_correct), SPLIT)

    assert math.isnan(result.balanced_accuracy) and math.isnan(result.roc_auc)
    assert result.reason == "the test half has only one class"
    assert not error_detection(sentences(TEST), SPLIT).defined  # nothing in the validation half


def test_and_flags_what_either_evaluator_flags_and_or_what_both_flag():
    first = sentences(VALIDATION + TEST)
    # The second evaluator: threshold 0.5 on validation (scores 0.4/0.6 separate the classes).
    second = sentences([("v1", 1, 0.4, True), ("v1", 2, 0.6, False), ("v2", 3, 0.4, True), ("v2", 4, 0.6, False),
                        ("t1", 6, 0.4, True), ("t1", 7, 0.4, True), ("t1", 8, 0.4, False), ("t2", 9, 0.6, False),
                        ("t2", 10, 0.6, False), ("t2", 11, 0.4, True)])  # sentence 12 is not scored

    result = combined_detection(first, second, SPLIT)

    keys = [6, 7, 8, 9, 10, 11]
    truth = [True, True, False, False, False, True]
    first_flags = dict(zip(keys, [True, False, False, False, False, False]))  # below 0.55
    second_flags = dict(zip(keys, [True, True, True, False, False, True]))  # below 0.5
    for rule, combine in (("and", lambda a, b: a or b), ("or", lambda a, b: a and b)):
        flagged = [combine(first_flags[k], second_flags[k]) for k in keys]
        assert result[rule].balanced_accuracy == pytest.approx(balanced_accuracy_score(truth, flagged))
        tn, fp, fn, tp = confusion_matrix(truth, flagged, labels=[False, True]).ravel()
        assert (result[rule].tn, result[rule].fp, result[rule].fn, result[rule].tp) == (tn, fp, fn, tp)
        assert result[rule].n_test == 6
    # AND catches every error here at the cost of one false alarm; OR catches only the one both flag.
    assert (result["and"].tp, result["and"].fp) == (3, 1)
    assert (result["or"].tp, result["or"].fp) == (1, 0)
