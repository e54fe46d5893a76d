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


def refusal(project, data: bytes, filename: str, evaluator: str = "judge") -> list[str]:
    from corpus.importing import DatasetError

    with pytest.raises(DatasetError) as refused:
        import_evaluator_scores(project=project, evaluator=evaluator, data=data, filename=filename)
    return [str(error) for error in refused.value.errors]


def test_bad_evaluator_files_and_names_are_refused_with_a_message_and_nothing_is_stored(project):
    # Each of these was a 500 on the upload page (PostgreSQL refuses a name longer than the column; the csv module
    # raises on an oversized cell; a key with a lone surrogate broke the page showing the message).
    from assist.models import EvaluatorScore

    import_generated(project, documents=1, summarizers=1)
    good = b'{"uid": "gen-0", "model": "model-0", "faithfulness": 1}\n'
    limit = EvaluatorScore._meta.get_field("evaluator").max_length
    assert refusal(project, good, "s.jsonl", evaluator="e" * (limit + 1)) == [
        f"file: the evaluator's name is {limit + 1} characters; the limit is {limit}"]
    assert refusal(project, good, "s.jsonl", evaluator="judge\x00")[0].startswith(
        "file: the evaluator's name contains a NUL character")
    huge_cell = b"uid,model,faithfulness\ngen-0,model-0,\"" + b"1" * 200_000 + b'"\n'
    assert refusal(project, huge_cell, "s.csv")[0].startswith("line 1: unreadable CSV row (field larger than")
    extra_cells = b"uid,model,faithfulness\ngen-0,model-0,1,2\n"
    assert refusal(project, extra_cells, "s.csv") == ["line 2: the row has more cells than the header"]
    surrogate_key = b'{"uid": "gen-0", "model": "model-0", "faithfulness": 1, "\\ud800": 2}\n'
    messages = refusal(project, surrogate_key, "s.jsonl")
    assert messages[0].startswith("line 1: a column name contains a lone surrogate") and len(messages) == 1
    assert not EvaluatorScore.objects.exists()
    assert import_evaluator_scores(project=project, evaluator="e" * limit, data=good, filename="s.jsonl") == 1
