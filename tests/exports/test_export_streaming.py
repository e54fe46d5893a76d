"""The export streams: votes read in one query as the document chunks come, rows written as they are made. What it
writes must not depend on how it is cut into chunks, and must be the counted labels, in annotator order."""

import pytest
from django.db import connection

from annotation.models import Task
from corpus.models import SummarySentence
from exports import aggregation
from exports.export import ExportOptions, export_benchmark
from exports.scores import abstractiveness, novel_ngram_ratio, tokenize
from exports.selectors import analysis_labels, label_source, stream
from exports.simulate import simulate_annotations
from tests.work import add_assistance, import_generated

from .test_export import read_jsonl


@pytest.fixture
def simulated(project):
    import_generated(project, documents=5, summarizers=3, sentences=3)
    add_assistance(project)
    simulate_annotations(project=project, annotators=3, accuracy=0.8, seed=5)
    return project


OPTIONS = ExportOptions(annotator_labels=True, assistance=True, checks=True)


def test_the_rows_do_not_depend_on_the_chunk_and_fetch_sizes(simulated, tmp_path, monkeypatch):
    whole = export_benchmark(project=simulated, out=tmp_path / "whole" / "b.jsonl", options=OPTIONS)
    monkeypatch.setattr(aggregation, "DOCUMENT_CHUNK", 1)
    monkeypatch.setattr(aggregation, "VOTES_PER_FETCH_AND_DOCUMENT", 1)  # A fetch of one vote at a time.
    cut = export_benchmark(project=simulated, out=tmp_path / "cut" / "b.jsonl", options=OPTIONS)
    assert whole.rows == cut.rows == 15
    assert [path.name for path in whole.files] == [path.name for path in cut.files]
    for first, second in zip(whole.files, cut.files):
        assert first.read_bytes() == second.read_bytes(), first.name


def test_each_row_carries_the_counted_labels_of_its_summary_in_annotator_order(simulated, tmp_path):
    export_benchmark(project=simulated, out=tmp_path / "b.jsonl", options=OPTIONS)
    rows = {(row["uid"], row["model"]): row for row in read_jsonl(tmp_path / "b.jsonl")}
    labels = analysis_labels(simulated, label_source(simulated))
    index = dict(SummarySentence.objects.values_list("pk", "index"))
    expected = {}
    for uid, model, sentence, annotator, has_error, types in (
            labels.filter(unit__task=Task.FACT_VERIFICATION, has_error__isnull=False)
            .order_by("unit__summary_sentence__index", "annotator_id")
            .values_list("unit__hit__document__uid", "unit__hit__summary__model", "unit__summary_sentence_id",
                         "annotator__public_id", "has_error", "error_types")):
        expected.setdefault((uid, model), []).append(
            {"annotator": f"ann-{annotator.hex[:10]}", "sentence": index[sentence], "has_error": has_error,
             "error_types": types or []})
    assert expected and set(expected) <= set(rows)
    for key, row in rows.items():
        assert row["annotator_labels"]["fact_verification"] == expected.get(key, [])
    n_ka = labels.filter(unit__task=Task.KEYFACT_ALIGNMENT, aligned__isnull=False).count()
    assert n_ka and sum(len(row["annotator_labels"]["keyfact_alignment"]) for row in rows.values()) == n_ka


def test_abstractiveness_with_the_source_n_grams_made_once_is_the_formula():
    source = "The cat sat on the mat. The dog, however, did not sit on the mat at all."
    for summary in ("The cat sat on the mat.", "A dog sat.", "Cats", "", "the dog did not sit on the mat at all"):
        ratios = [novel_ngram_ratio(tokenize(summary), tokenize(source), n) for n in (1, 3, 5)]
        defined = [ratio for ratio in ratios if ratio is not None]
        assert abstractiveness(summary, source) == (sum(defined) / len(defined) if defined else None)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="cursor_tuple_fraction is PostgreSQL's")
def test_a_stream_plans_for_every_row_and_restores_the_setting(simulated):
    def fraction():
        with connection.cursor() as cursor:
            cursor.execute("SHOW cursor_tuple_fraction")
            return cursor.fetchone()[0]

    before = fraction()
    rows = stream(analysis_labels(simulated, label_source(simulated)).values_list("pk", flat=True), 10)
    first = next(rows)
    assert fraction() == before
    assert len([first, *rows]) == analysis_labels(simulated, label_source(simulated)).count()
