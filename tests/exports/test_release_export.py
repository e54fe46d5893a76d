"""The export carries every evaluator's stored scores in the release's layout (exports.machine_scores), so that the
exported file reads as the release: export, then import_release, gives the same scores back."""

import io
import json
from pathlib import Path

from django.core.management import call_command

from annotation.models import Label, Task, Unit
from assist.models import EvaluatorScore, EvaluatorSentenceScore
from corpus.models import Project, Summary
from exports.analytics import project_analytics
from exports.export import export_benchmark
from exports.models import ReleaseLabels
from exports.release import import_release
from exports.simulate import simulate_annotations
from tests.work import import_generated

QUIRKS = Path(__file__).resolve().parents[1] / "fixtures" / "release_quirks"


def import_folder(project, faithfulness: bytes, keyfact: bytes):
    return import_release(project=project, faithfulness=faithfulness, keyfact=keyfact, release="UniSumEval-v1.0")


def run_scores(project) -> None:
    """A built-in evaluator's scores as a run stores them: per summary, and per sentence with a verdict and a
    category, one sentence left without a judgment; and a failed score, which is no score."""
    first, second, third = Summary.objects.filter(document__project=project).order_by("pk")[:3]
    for summary, value in ((first, 0.5), (second, 0.75)):
        score = EvaluatorScore.objects.create(
            project=project, summary=summary, evaluator="finesure", origin=EvaluatorScore.Origin.RUN,
            faithfulness=value, completeness=0.25, conciseness=None, composite=0.375)
        sentences = list(summary.sentences.order_by("index"))
        for sentence in sentences[:-1]:
            error = sentence.index == 0
            EvaluatorSentenceScore.objects.create(evaluator_score=score, summary_sentence=sentence,
                                                  score=0.0 if error else 1.0, error=error,
                                                  category="entity" if error else "no_error", reason="Because.")
    EvaluatorScore.objects.create(project=project, summary=third, evaluator="finesure",
                                  origin=EvaluatorScore.Origin.RUN, status=EvaluatorScore.Status.FAILED,
                                  error="ParseError", faithfulness=None)


def scores_of(project) -> dict:
    return {(row.pop("evaluator"), row.pop("summary__document__uid"), row.pop("summary__model")): row
            for row in EvaluatorScore.objects.filter(project=project, status=EvaluatorScore.Status.OK)
            .values("evaluator", "summary__document__uid", "summary__model", *EvaluatorScore.DIMENSIONS)}


def sentence_scores_of(project) -> dict:
    return {row[:4]: row[4:] for row in EvaluatorSentenceScore.objects.filter(evaluator_score__project=project)
            .values_list("evaluator_score__evaluator", "summary_sentence__summary__document__uid",
                         "summary_sentence__summary__model", "summary_sentence__index", "score", "error", "category")}


def labels_of(project, fields) -> dict:
    return {row[:2]: row[2:] for row in ReleaseLabels.objects.filter(project=project).values_list(
        "summary__document__uid", "summary__model", *fields)}


def test_export_then_import_release_gives_the_same_scores_per_summary_and_per_sentence(project, other_project,
                                                                                      tmp_path):
    import_folder(project, (QUIRKS / "unisumeval_faithfulness.jsonl").read_bytes(),
                  (QUIRKS / "unisumeval_keyfact.jsonl").read_bytes())
    run_scores(project)
    out = tmp_path / "study.jsonl"

    export_benchmark(project=project, out=out)
    # One file holds both of the release's: given as both.
    result = import_folder(other_project, out.read_bytes(), out.read_bytes())

    assert result.summaries == 16 and result.left_out == []
    assert result.ignored_fields == ["composite", "label_source"]  # the export's own, beyond the release
    assert scores_of(other_project) == scores_of(project)
    assert len(scores_of(project)) == 16 + 16 + 13 + 14 + 2  # G-Eval, G-Eval+, SummaC Conv, A3CU (F1), finesure
    assert sentence_scores_of(other_project) == sentence_scores_of(project) != {}
    assert result.evaluators["finesure"] == {"faithfulness": 2, "completeness": 2, "composite": 2}
    assert result.sentence_scores == {"finesure": len(sentence_scores_of(project))}
    fields = ("fact_verification_label", "fact_verification_error_type", "faithfulness_score", "keyfact",
              "keyfact_label", "sentence_label", "completeness", "conciseness", "keyfact_validation_label")
    assert labels_of(other_project, fields) == labels_of(project, fields)


def test_the_command_reads_an_export_given_as_one_file(project, tmp_path):
    import_folder(project, (QUIRKS / "unisumeval_faithfulness.jsonl").read_bytes(),
                  (QUIRKS / "unisumeval_keyfact.jsonl").read_bytes())
    run_scores(project)
    out = tmp_path / "study.jsonl"
    export_benchmark(project=project, out=out)
    printed = io.StringIO()

    call_command("import_release", str(out), "--project", "again", stdout=printed)

    again = Project.objects.get(slug="again")
    assert scores_of(again) == scores_of(project) and sentence_scores_of(again) == sentence_scores_of(project)
    judged = len(sentence_scores_of(project))
    assert f"finesure: faithfulness 2, completeness 2, composite 2, sentences {judged}" in printed.getvalue()


def test_the_export_writes_the_scores_in_the_releases_layout(project, tmp_path):
    import_folder(project, (QUIRKS / "unisumeval_faithfulness.jsonl").read_bytes(),
                  (QUIRKS / "unisumeval_keyfact.jsonl").read_bytes())
    run_scores(project)
    summary = Summary.objects.filter(document__project=project).order_by("pk").first()
    out = tmp_path / "study.jsonl"

    export_benchmark(project=project, out=out)

    rows = {(row["uid"], row["model"]): row for row in map(json.loads, out.read_text().splitlines())}
    row = rows[summary.document.uid, summary.model]
    assert row["summary_success_state"] == "success"
    assert row["machine_evaluation_results_faithfulness"]["finesure"] == 0.5
    assert row["machine_evaluation_results_composite"] == {"finesure": 0.375}
    assert "finesure" not in row["machine_evaluation_results_conciseness"]  # no score is no entry
    n = len(row["sentences"])
    assert row["machine_evaluation_results_sentence_score"] == {"finesure": [0.0, *[1.0] * (n - 2), None]}
    assert row["machine_evaluation_results_sentence_label"] == {"finesure": [1, *[0] * (n - 2), None]}
    assert row["machine_evaluation_results_sentence_error_type"] == {
        "finesure": ["entity", *["no_error"] * (n - 2), None]}
    nan_row = rows["DISL_001", "Phi-2"]  # SummaC Conv's score is NaN in the release: absent, as missing
    assert "SummaC Conv" not in nan_row["machine_evaluation_results_faithfulness"]
    assert nan_row["machine_evaluation_results_sentence_score"] == {}


def test_a_study_exported_here_reads_as_the_release_with_its_undecided_items(project, other_project, tmp_path):
    import_generated(project, documents=3, summarizers=2, sentences=3)
    simulate_annotations(project=project, annotators=3, accuracy=0.8, seed=5)
    # A key-fact/sentence pair without any counted label: its key-fact and sentence stay undecided (null).
    cell = Unit.objects.filter(task=Task.KEYFACT_ALIGNMENT).order_by("pk").first()
    Label.objects.filter(unit=cell).update(aligned=None)
    out = tmp_path / "study.jsonl"
    export_benchmark(project=project, out=out)
    exported = {(row["uid"], row["model"]): row for row in map(json.loads, out.read_text().splitlines())}
    assert any(None in row["sentence_label"] for row in exported.values())

    result = import_folder(other_project, out.read_bytes(), out.read_bytes())

    assert result.summaries == len(exported)
    fields = ("fact_verification_label", "faithfulness_score", "keyfact", "keyfact_label", "sentence_label",
              "completeness", "conciseness")
    assert labels_of(other_project, fields) == {key: tuple(row[f] for f in fields) for key, row in exported.items()}
    analytics = project_analytics(other_project)
    assert analytics.label_source == "release" and len(analytics.summaries) == len(exported)
