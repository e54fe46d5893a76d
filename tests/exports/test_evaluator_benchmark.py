"""Evaluator benchmarking (UniSumEval appendix D.2), on small datasets computed by hand.

p-values by hand: for r on n points, t = r * sqrt(n - 2) / sqrt(1 - r^2) with n - 2 degrees of freedom;
for 3 degrees of freedom Student's CDF has the closed form
F(t) = 1/2 + (1/pi) * (a / (1 + a^2) + arctan(a)), a = t / sqrt(3), and p = 2 * (1 - F(t)).
"""

import math
import warnings

import pytest

from exports.evaluator_benchmark import (
    MIN_POINTS,
    benchmark_evaluator,
    pearson,
    rows_from_scores,
    spearman,
    summary_level_correlation,
    system_level_correlation,
)


def student_p_3df(t: float) -> float:
    a = t / math.sqrt(3)
    return 2 * (1 - (0.5 + (a / (1 + a * a) + math.atan(a)) / math.pi))


def test_pearson_by_hand():
    # x = 1..5, y = 2, 4, 5, 4, 5: deviations (-2, -1, 0, 1, 2) and (-2, 0, 1, 0, 1);
    # sum dx dy = 6, sum dx^2 = 10, sum dy^2 = 6, r = 6 / sqrt(60) = 0.774597;
    # t = r * sqrt(3) / sqrt(1 - 0.6) = 2.121320, p = 0.124027.
    result = pearson([1, 2, 3, 4, 5], [2, 4, 5, 4, 5])
    assert result.statistic == pytest.approx(6 / math.sqrt(60))
    assert result.p_value == pytest.approx(student_p_3df(2.1213203435596424), abs=1e-9)
    assert result.p_value == pytest.approx(0.124027, abs=1e-6)
    assert result.n == 5 and result.reason == "" and result.defined


def test_spearman_by_hand():
    # Ranks (5, 4, 3, 2, 1) and (5, 3, 4, 2, 1): d = (0, 1, -1, 0, 0), sum d^2 = 2,
    # rho = 1 - 6 * 2 / (5 * 24) = 0.9; t = 0.9 * sqrt(3 / 0.19) = 3.576237, p = 0.037386.
    result = spearman([90, 80, 70, 60, 50], [0.9, 0.7, 0.8, 0.6, 0.5])
    assert result.statistic == pytest.approx(0.9)
    assert result.p_value == pytest.approx(0.037386, abs=1e-6)


def test_constant_inputs_are_nan_with_a_reason_and_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        human_constant = pearson([50, 50, 50, 50], [1, 2, 3, 4])
        evaluator_constant = spearman([1, 2, 3, 4], [7, 7, 7, 7])
    assert math.isnan(human_constant.statistic) and math.isnan(human_constant.p_value)
    assert human_constant.reason == "the human scores are constant"
    assert evaluator_constant.reason == "the evaluator scores are constant"
    assert not human_constant.defined and human_constant.n == 4


def test_too_few_points_and_missing_scores():
    result = pearson([1, None, 3], [2, 5, float("nan")])
    assert result.n == 1 and math.isnan(result.statistic)
    assert result.reason == f"fewer than {MIN_POINTS} points"
    # Missing pairs are dropped: this leaves x = 1, 2, 3 and y = 1, 2, 3, a perfect correlation.
    assert pearson([1, 2, None, 3], [1, 2, 9, 3]).statistic == pytest.approx(1.0)
    with pytest.raises(ValueError):
        pearson([1, 2, 3], [1, 2])


def benchmark_rows() -> list[dict]:
    """Five summarizers, two documents each, in two domains.

    Human means per model: A 90, B 80, C 70, D 60, E 50; evaluator means: A 0.9, B 0.7, C 0.8, D 0.6,
    E 0.5, the system-level data of test_spearman_by_hand (rho = 0.9).
    """
    human = {"A": (95, 85), "B": (70, 90), "C": (60, 80), "D": (60, 60), "E": (40, 60)}
    evaluator = {"A": (0.8, 1.0), "B": (0.6, 0.8), "C": (0.9, 0.7), "D": (0.5, 0.7), "E": (0.5, 0.5)}
    return [
        {
            "uid": f"doc{i}",
            "model": model,
            "domain": ["news", "meeting"][i],
            "human": human[model][i],
            "evaluator": evaluator[model][i],
        }
        for model in human
        for i in range(2)
    ]


def test_system_level_uses_summarizer_means():
    result = system_level_correlation(benchmark_rows())
    assert result.statistic == pytest.approx(0.9)
    assert result.p_value == pytest.approx(0.037386, abs=1e-6)
    assert result.n == 5


def test_summary_level_is_pearson_over_summaries():
    rows = benchmark_rows()
    expected = pearson([row["human"] for row in rows], [row["evaluator"] for row in rows])
    assert summary_level_correlation(rows) == expected
    assert expected.n == 10


def test_benchmark_evaluator_per_domain():
    rows = benchmark_rows()
    rows.append({"uid": "doc9", "model": "A", "human": 10, "evaluator": 0.1})  # No domain: overall only.
    benchmark = benchmark_evaluator(rows)
    assert list(benchmark.by_domain) == ["meeting", "news"]
    assert benchmark.overall.summary_level.n == 11
    news = benchmark.by_domain["news"]
    # News, one summary per model: human (95, 70, 60, 60, 40), evaluator (0.8, 0.6, 0.9, 0.5, 0.5).
    assert news.summary_level.n == 5 and news.system_level.n == 5
    # Human ranks (5, 4, 2.5, 2.5, 1), evaluator ranks (4, 3, 5, 1.5, 1.5): Pearson on ranks, by hand:
    # means 3 and 3; deviations (2, 1, -0.5, -0.5, -2) and (1, 0, 2, -1.5, -1.5);
    # sum = 2 + 0 - 1 + 0.75 + 3 = 4.75; sums of squares 9.5 and 9.5; rho = 4.75 / 9.5 = 0.5.
    assert news.system_level.statistic == pytest.approx(0.5)


def test_benchmark_with_a_constant_domain_does_not_crash():
    rows = [
        {"model": model, "domain": "booking", "human": 100.0, "evaluator": score}
        for model, score in zip("ABCD", (0.1, 0.2, 0.3, 0.4))
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        benchmark = benchmark_evaluator(rows)
    booking = benchmark.by_domain["booking"]
    assert booking.summary_level.reason == "the human scores are constant"
    assert booking.system_level.reason == "the human scores are constant"


def test_rows_from_scores_joins_on_uid_and_model():
    human = {("d1", "A"): 1.0, ("d1", "B"): 0.5, ("d2", "A"): None}
    evaluator = {("d1", "A"): 0.9, ("d2", "A"): 0.4, ("d3", "C"): 0.1}
    rows = rows_from_scores(human, evaluator, domains={"d1": "news", "d2": "meeting"})
    assert rows == [
        {"uid": "d1", "model": "A", "human": 1.0, "evaluator": 0.9, "domain": "news"},
        {"uid": "d2", "model": "A", "human": None, "evaluator": 0.4, "domain": "meeting"},
    ]
    assert summary_level_correlation(rows).n == 1
