"""Benchmarking an automatic evaluator against the human scores of a (simulated) project."""

import json

import pytest

from exports.analytics import project_analytics
from exports.evaluators import benchmark, import_evaluator_scores
from exports.simulate import simulate_annotations
from tests.work import add_assistance, import_generated


def test_an_evaluator_equal_to_the_humans_correlates_perfectly(project):
    import_generated(project, documents=4, summarizers=3, sentences=3)
    add_assistance(project)
    simulate_annotations(project=project, annotators=3, accuracy=0.7, seed=5)
    analytics = project_analytics(project)
    rows = [{"uid": row.uid, "model": row.model, "faithfulness": row.faithfulness * 10 + 1}  # another scale
            for row in analytics.summaries.itertuples() if row.faithfulness == row.faithfulness]
    assert len(rows) >= 6
    data = "\n".join(json.dumps(row) for row in rows).encode()
    assert import_evaluator_scores(project=project, evaluator="copy", data=data, filename="s.jsonl") == len(rows)
    result = benchmark(project, "copy", analytics)["faithfulness"]
    summary = result.overall.summary_level
    if summary.defined:
        assert summary.statistic == pytest.approx(1.0)
        assert summary.p_value < 0.05
        assert summary.n == len(rows)
    else:  # every simulated summary scored the same: nothing to correlate
        assert "constant" in summary.reason
    assert set(result.by_domain) <= {"news", "sport"}
