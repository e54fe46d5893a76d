"""Evaluators on the analytics page: a manager runs one, reads its benchmark, downloads it; the export has the same
numbers. Everyone but the project's managers is refused."""

import csv
import io
import json
import re

import pytest
from django.urls import reverse

from assist.llm.registry import clear_backends
from assist.models import EvaluatorScore
from corpus.models import Job
from exports.export import ExportOptions, export_benchmark
from exports.simulate import simulate_annotations
from exports.tables import COMBINATION_COLUMNS, DETECTION_COLUMNS, EVALUATOR_COLUMNS
from tests.work import import_generated

pytestmark = pytest.mark.usefixtures("numbers_worker")


@pytest.fixture(autouse=True)
def fresh_backends():
    clear_backends()
    yield
    clear_backends()


@pytest.fixture
def piloted(project):
    """Six documents in two domains, three summarizers, simulated labels (a pilot)."""
    import_generated(project, documents=6, summarizers=3, sentences=3)
    simulate_annotations(project=project, annotators=3, accuracy=0.8, seed=5)
    return project


def login(client, user):
    client.force_login(user)
    return client


def start(client, project, evaluator="sbertscore", **data):
    return client.post(reverse("exports_evaluator_run", args=[project.slug]), {"evaluator": evaluator, **data})


def csv_rows(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_a_manager_runs_sbertscore_and_reads_its_benchmark(client, piloted, manager,
                                                           django_capture_on_commit_callbacks):
    client = login(client, manager)
    with django_capture_on_commit_callbacks(execute=True):
        response = start(client, piloted)
    assert response.status_code == 302 and response["Location"].endswith("#evaluators")
    job = Job.objects.get(project=piloted, kind="evaluator")
    assert (job.status, job.progress, job.total, job.result["scored"]) == ("done", 6, 6, 18)
    status = client.get(reverse("job_status", args=[piloted.slug, job.pk]), HTTP_HX_REQUEST="true")
    assert status.status_code == 286 and "18 summaries scored" in status.content.decode()

    html = client.get(reverse("exports_analytics", args=[piloted.slug])).content.decode()
    rows = csv_rows(client.get(reverse("exports_table_csv", args=[piloted.slug, "evaluators"])))
    assert tuple(rows[0]) == EVALUATOR_COLUMNS  # the header an empty table gets is the one a full table has
    overall = {row["dimension"]: row for row in rows if row["group_by"] == "overall"}
    assert set(overall) == {"faithfulness", "completeness", "composite"}  # SBERTScore gives no conciseness
    assert overall["faithfulness"]["evaluator_score"] == "precision"
    assert {row["group"] for row in rows if row["group_by"] == "domain"} == {"news", "sport"}
    assert {row["group"] for row in rows if row["group_by"] == "source"} == {"Gen"}
    assert overall["faithfulness"]["summary_n"] == "18"
    assert 'class="grid compact evaluator-table"' in html and "precision" in html
    pearson = overall["faithfulness"]["summary_pearson"]
    if pearson:  # defined unless every simulated summary got the same score
        assert f"{float(pearson):.3f}" in html

    [detection] = csv_rows(client.get(reverse("exports_table_csv", args=[piloted.slug, "detection"])))
    assert detection["evaluator"] == "sbertscore" and "seed 0" in detection["split"]
    assert tuple(detection) == DETECTION_COLUMNS
    assert "Documents split 50/50 at random (seed 0)" in html
    assert int(detection["validation_sentences"]) + int(detection["test_sentences"]) <= 54
    assert "style=" not in html and "<script>" not in html


def test_the_evaluator_tables_download_with_their_header_before_any_evaluator_ran(client, piloted, manager):
    client = login(client, manager)
    for table, columns in (("evaluators", EVALUATOR_COLUMNS), ("detection", DETECTION_COLUMNS),
                           ("detection-combinations", COMBINATION_COLUMNS), ("evaluator-sbertscore", EVALUATOR_COLUMNS)):
        response = client.get(reverse("exports_table_csv", args=[piloted.slug, table]))
        assert response.status_code == 200, table
        assert list(csv.reader(io.StringIO(response.content.decode()))) == [list(columns)], table


def test_an_llm_evaluator_without_a_language_model_is_refused_with_a_message(client, piloted, manager):
    response = login(client, manager).post(reverse("exports_evaluator_run", args=[piloted.slug]),
                                           {"evaluator": "finesure"}, follow=True)
    assert response.status_code == 200
    assert "finesure cannot run: finesure needs a language model" in response.content.decode()
    assert not Job.objects.filter(kind="evaluator").exists()
    response = client.post(reverse("exports_evaluator_run", args=[piloted.slug]), {"evaluator": "rouge"},
                           follow=True)
    assert "Choose an evaluator" in response.content.decode()
    response = client.post(reverse("exports_evaluator_run", args=[piloted.slug]),
                           {"evaluator": "finesure", "backend": "openai:anything-i-type"}, follow=True)
    assert "Choose one of the configured LLM backends" in response.content.decode()
    assert not Job.objects.filter(kind="evaluator").exists()


def test_only_managers_run_evaluators_or_read_their_tables(client, piloted, manager, annotator, outsider):
    login(client, manager)
    start(client, piloted)  # queued only: nothing runs the on-commit hook here
    job = Job.objects.get(project=piloted, kind="evaluator")
    for user, status in ((annotator, 403), (outsider, 404)):
        client = login(client, user)
        assert start(client, piloted).status_code == status
        assert client.get(reverse("job_status", args=[piloted.slug, job.pk])).status_code == status
        for table in ("evaluators", "detection", "detection-combinations", "evaluator-sbertscore"):
            assert client.get(reverse("exports_table_csv", args=[piloted.slug, table])).status_code == status
    assert Job.objects.filter(project=piloted, kind="evaluator").count() == 1


def test_a_second_run_of_the_same_evaluator_waits_for_the_first(client, piloted, manager):
    client = login(client, manager)
    start(client, piloted)  # left running: nothing executes its tasks here
    response = start(client, piloted)
    assert response.status_code == 302
    assert Job.objects.filter(project=piloted, kind="evaluator").count() == 1


def test_two_evaluators_are_combined_and_the_export_carries_the_same_numbers(client, piloted, manager, tmp_path,
                                                                             django_capture_on_commit_callbacks):
    client = login(client, manager)
    with django_capture_on_commit_callbacks(execute=True):
        start(client, piloted)
    # A second evaluator with sentence scores: a copy of SBERTScore's, saved under another name.
    for score in EvaluatorScore.objects.filter(evaluator="sbertscore").prefetch_related("sentences"):
        sentences = list(score.sentences.all())
        score.pk, score.evaluator = None, "sbertscore-copy"
        score.save()
        for sentence in sentences:
            sentence.pk, sentence.evaluator_score = None, score
            sentence.score = 1 - sentence.score  # the opposite opinion
            sentence.save()

    combinations = csv_rows(client.get(reverse("exports_table_csv", args=[piloted.slug, "detection-combinations"])))
    assert [(row["first"], row["second"], row["rule"]) for row in combinations] == [
        ("sbertscore", "sbertscore-copy", "AND"), ("sbertscore", "sbertscore-copy", "OR")]
    html = client.get(reverse("exports_analytics", args=[piloted.slug])).content.decode()
    assert 'class="grid compact fit combination-table"' in html
    # Figure 1's layout: above the diagonal OR, below it AND, each cell naming its rule.
    by_rule = {row["rule"]: row["balanced_accuracy"] for row in combinations}
    for rule, mark in (("OR", "sbertscore OR sbertscore-copy"), ("AND", "sbertscore-copy AND sbertscore")):
        cell = re.search(rf'<td class="num" title="{mark} \(consistent[^"]*">([^<]*)</td>', html)
        # The page rounds the value to 3 decimals, the CSV to 4.
        assert float(cell[1]) == pytest.approx(float(by_rule[rule]), abs=0.0006)
    assert html.count('class="num diagonal"') == 2

    result = export_benchmark(project=piloted, out=tmp_path / "out.jsonl", options=ExportOptions(tables="csv"))
    names = [path.name for path in result.files]
    assert {"out.evaluator_benchmark.json", "out.evaluator_benchmark.csv", "out.evaluator_detection.csv"} <= set(names)
    exported = json.loads((tmp_path / "out.evaluator_benchmark.json").read_text())
    page_rows = csv_rows(client.get(reverse("exports_table_csv", args=[piloted.slug, "evaluators"])))
    assert [{k: "" if v is None else str(v) for k, v in row.items()} for row in exported["summary_level"]] == page_rows
    detection = csv_rows(client.get(reverse("exports_table_csv", args=[piloted.slug, "detection"])))
    assert [{k: "" if v is None else str(v) for k, v in row.items()}
            for row in exported["sentence_level"]["detection"]] == detection
    assert exported["sentence_level"]["split"]["seed"] == 0
    assert len(exported["sentence_level"]["split"]["validation_documents"]) == 3
