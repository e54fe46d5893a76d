"""The release as published has gaps the import must take as they are (exports.release): NaN or missing scores,
evaluator names with spaces and brackets, failed summaries without a model. Two hand-made copies of the same data
(tests/fixtures/release_clean, tests/fixtures/release_quirks) must give the same figures; only what cannot be read
as the release is refused, with every problem at its line."""

import io
import json
import math
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from assist.models import EvaluatorScore
from corpus.importing import DatasetError
from corpus.models import Document, KeyFact, Project
from exports.analytics import project_analytics
from exports.evaluators import benchmark
from exports.models import ReleaseLabels
from exports.release import import_release

pytestmark = pytest.mark.usefixtures("numbers_worker")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLEAN, QUIRKS = FIXTURES / "release_clean", FIXTURES / "release_quirks"
FAITHFULNESS, KEYFACT = "unisumeval_faithfulness.jsonl", "unisumeval_keyfact.jsonl"
EVERY_DIMENSION = {"faithfulness": 16, "completeness": 16, "conciseness": 16}


def imported(project, folder=QUIRKS, *, faithfulness: bytes | None = None, keyfact: bytes | None = None):
    return import_release(project=project, release="UniSumEval-v1.0",
                          faithfulness=faithfulness or (folder / FAITHFULNESS).read_bytes(),
                          keyfact=keyfact or (folder / KEYFACT).read_bytes())


def test_it_takes_nan_and_missing_scores_as_missing_values_and_counts_them(project):
    result = imported(project)

    assert (result.documents, result.summaries) == (4, 16)
    assert result.left_out == [("DISL_002", "Qwen-7b"), ("DISL_003", None)]  # the second row has no model
    assert result.evaluators == {"A3CU (F1)": {"completeness": 14}, "G-Eval": EVERY_DIMENSION,
                                 "G-Eval+": EVERY_DIMENSION, "SummaC Conv": {"faithfulness": 13}}
    assert result.missing_scores == {"A3CU (F1)": {"completeness": 2}, "SummaC Conv": {"faithfulness": 3}}
    assert result.missing_human == {"faithfulness_score": 1, "completeness": 1, "conciseness": 1}
    assert result.ignored_fields == []
    # Stored under the names as written, only where there is a score.
    assert EvaluatorScore.objects.filter(evaluator="SummaC Conv").count() == 13
    assert not EvaluatorScore.objects.filter(evaluator="SummaC Conv", faithfulness__isnull=True).exists()
    nan_row = ReleaseLabels.objects.get(summary__document__uid="DISL_004", summary__model="Llama3-70b")
    assert nan_row.faithfulness_score is None  # NaN in the file


def test_the_summary_line_counts_the_scores_that_are_there_under_the_names_as_written(project):
    text = str(imported(project))

    assert "2 summaries left out" in text
    assert ("summaries scored per evaluator: A3CU (F1): completeness 14; G-Eval: faithfulness 16, completeness 16, "
            "conciseness 16; G-Eval+: faithfulness 16, completeness 16, conciseness 16; SummaC Conv: faithfulness 13"
            in text)
    assert ("missing scores (null or NaN): A3CU (F1): completeness 2; SummaC Conv: faithfulness 3; human "
            "faithfulness_score: 1; human completeness: 1; human conciseness: 1") in text


def test_the_command_prints_the_counts_with_the_names_as_written(db):
    out = io.StringIO()

    call_command("import_release", str(QUIRKS), "--project", "reference", stdout=out)

    assert "SummaC Conv: faithfulness 13" in out.getvalue() and "A3CU (F1): completeness 14" in out.getvalue()
    assert Project.objects.get(slug="reference").release_labels.count() == 16


def by_summary(queryset, *fields):
    return {(row.pop("summary__document__uid"), row.pop("summary__model"), *(row.pop(f) for f in fields)): row
            for row in queryset.values("summary__document__uid", "summary__model", *fields,
                                       *(f.name for f in queryset.model._meta.concrete_fields
                                         if f.name not in ("id", "project", "summary", "imported", "created",
                                                           "updated", *fields)))}


def figures(project) -> dict:
    analytics = project_analytics(project)
    numbers = {}
    for evaluator in EvaluatorScore.objects.filter(project=project).values_list("evaluator", flat=True).distinct():
        for dimension, result in benchmark(project, evaluator, analytics).items():
            for source, levels in result.by_source.items():
                numbers[evaluator, dimension, source] = tuple(
                    None if math.isnan(x) else round(x, 12) for x in (
                        levels.summary_level.statistic, levels.summary_level_spearman.statistic,
                        levels.system_level.statistic)) + (levels.summary_level.n,)
    return numbers


def test_the_clean_and_the_quirky_file_give_the_same_figures_for_the_summaries_they_share(project, other_project):
    clean, quirky = imported(project, CLEAN), imported(other_project, QUIRKS)

    assert (clean.evaluators, clean.missing_scores, clean.missing_human) == (
        quirky.evaluators, quirky.missing_scores, quirky.missing_human)
    assert clean.left_out == [] and len(quirky.left_out) == 2
    labels = ReleaseLabels.objects.filter(project=project)
    assert by_summary(labels) == by_summary(ReleaseLabels.objects.filter(project=other_project))
    scores = EvaluatorScore.objects.filter(project=project)
    assert by_summary(scores, "evaluator") == by_summary(EvaluatorScore.objects.filter(project=other_project),
                                                         "evaluator")
    mine = figures(project)
    assert mine == figures(other_project)
    assert mine["SummaC Conv", "faithfulness", "CNNDM"][3] == 6  # two of its eight CNNDM summaries have no score
    assert mine["A3CU (F1)", "completeness", "XSum"][3] == 3


def test_the_analytics_page_shows_an_evaluator_name_with_spaces_as_written(client, project, manager):
    imported(project)
    client.force_login(manager)

    page = client.get(reverse("exports_analytics", args=[project.slug])).content.decode()

    assert "SummaC Conv" in page and "A3CU (F1)" in page
    link = reverse("exports_table_csv", args=[project.slug, "evaluator-SummaC Conv"])
    assert link.endswith("/evaluator-SummaC%20Conv.csv")


# --- What is refused: a file that cannot be read as the release, with every problem by line, and nothing written.


def lines(folder: Path, name: str) -> list[str]:
    return (folder / name).read_text().splitlines()


def joined(rows: list[str]) -> bytes:
    return ("\n".join(rows) + "\n").encode()


def refused(project, **files) -> list[str]:
    with pytest.raises(DatasetError) as caught:
        imported(project, **files)
    assert not Document.objects.exists() and not ReleaseLabels.objects.exists()
    assert not EvaluatorScore.objects.exists() and not KeyFact.objects.exists()
    return [str(error) for error in caught.value.errors]


def edited(name: str, index: int, change) -> bytes:
    rows = lines(QUIRKS, name)
    row = json.loads(rows[index])
    change(row)
    rows[index] = json.dumps(row)
    return joined(rows)


def test_broken_json_is_refused_at_its_line(project):
    rows = lines(QUIRKS, FAITHFULNESS)
    rows[2] = rows[2][:-5]

    assert refused(project, faithfulness=joined(rows)) == [
        "unisumeval_faithfulness.jsonl, line 3: not valid JSON (Expecting value at column "
        f"{len(rows[2]) + 1})"]


def test_a_missing_required_field_is_refused_on_every_line_that_lacks_it(project):
    faithfulness = edited(FAITHFULNESS, 0, lambda row: row.pop("fact_verification_label"))
    rows = lines(QUIRKS, KEYFACT)
    for index in (1, 3):
        row = json.loads(rows[index])
        row["sentence_label"] = None  # null is no more a label list than an absent field
        rows[index] = json.dumps(row)

    assert refused(project, faithfulness=faithfulness, keyfact=joined(rows)) == [
        "unisumeval_faithfulness.jsonl, line 1, field 'fact_verification_label': missing required field",
        "unisumeval_keyfact.jsonl, line 2, field 'sentence_label': missing required field",
        "unisumeval_keyfact.jsonl, line 4, field 'sentence_label': missing required field",
    ]


def test_a_row_without_its_success_state_is_refused(project):
    assert refused(project, keyfact=edited(KEYFACT, 16, lambda row: row.pop("summary_success_state"))) == [
        "unisumeval_keyfact.jsonl, line 17, field 'summary_success_state': missing required field"]


def test_rows_of_one_document_that_disagree_on_its_text_are_refused(project):
    def change(row):
        row["input_context"] = row["input_context"].replace("Monday", "Tuesday")

    faithfulness = edited(FAITHFULNESS, 1, change)
    keyfact = edited(KEYFACT, 1, change)

    assert refused(project, faithfulness=faithfulness, keyfact=keyfact) == [
        "unisumeval_faithfulness.jsonl, line 2, field 'input_context': differs from line 1 for the same uid "
        "'DISL_001'"]


def test_a_score_that_is_no_number_and_a_name_that_cannot_be_served_are_refused(project):
    def change(row):
        row["machine_evaluation_results_faithfulness"] = {"G-Eval": "high", "AlignScore/large": 0.5,
                                                          "SummaC Conv": math.inf}

    assert refused(project, faithfulness=edited(FAITHFULNESS, 0, change)) == [
        "unisumeval_faithfulness.jsonl, line 1, field 'machine_evaluation_results_faithfulness': G-Eval: the score "
        "must be a finite number, or null or NaN when missing, got 'high'",
        "unisumeval_faithfulness.jsonl, line 1, field 'machine_evaluation_results_faithfulness': the evaluator's "
        "name 'AlignScore/large' cannot hold '/': it names the evaluator's table download",
        "unisumeval_faithfulness.jsonl, line 1, field 'machine_evaluation_results_faithfulness': SummaC Conv: the "
        "score must be a finite number, or null or NaN when missing, got inf",
    ]
