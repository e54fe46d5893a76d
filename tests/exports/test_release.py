"""The UniSumEval release as published, imported into a reference project (exports.release), on hand-made files in
its shape (tests/fixtures/release); the evaluator benchmark on it computes what the release's own script computes:
per source dataset, summary-level Pearson and Spearman and the rank correlation of the summarizers' mean scores,
over the summaries whose summary_success_state is "success"."""

import json
import math
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from scipy import stats

from annotation.models import Label
from assist.models import EvaluatorScore
from corpus.importing import DatasetError
from corpus.models import Document, KeyFact, Project, Summary
from exports.analytics import project_analytics
from exports.evaluators import benchmark, detection_report
from exports.export import ExportOptions, export_benchmark
from exports.models import ReleaseLabels
from exports.release import import_release
from exports.selectors import label_source
from exports.tables import evaluator_means

pytestmark = pytest.mark.usefixtures("numbers_worker")

FOLDER = Path(__file__).resolve().parents[1] / "fixtures" / "release"
FAITHFULNESS = FOLDER / "unisumeval_faithfulness.jsonl"
KEYFACT = FOLDER / "unisumeval_keyfact.jsonl"
HUMAN = {"faithfulness": ("faithfulness_score", FAITHFULNESS), "completeness": ("completeness", KEYFACT),
         "conciseness": ("conciseness", KEYFACT)}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def imported(project, faithfulness=None, keyfact=None):
    def data(given, path):
        return path.read_bytes() if given is None else "\n".join(json.dumps(row) for row in given).encode()

    return import_release(project=project, faithfulness=data(faithfulness, FAITHFULNESS),
                          keyfact=data(keyfact, KEYFACT), release="UniSumEval-v1.0")


def test_the_release_becomes_a_reference_project_with_its_majority_labels_kept_apart(project):
    result = imported(project)

    assert (result.documents, result.summaries, result.keyfacts) == (4, 16, 13)
    assert result.left_out == [("DISL_002", "Qwen-7b")]  # summary_success_state "fail"
    every_dimension = {"faithfulness": 16, "completeness": 16, "conciseness": 16}
    assert result.evaluators == {"G-Eval": every_dimension, "G-Eval+": every_dimension}
    assert result.missing_scores == {} and result.missing_human == {} and result.ignored_fields == []
    assert not Summary.objects.filter(model="Qwen-7b").exists()
    document = Document.objects.get(project=project, uid="DISL_004")
    assert (document.input_type, document.length, document.source, document.domain) == (
        "dialogue", "short", "DialogSum", "Daily life")
    assert document.text.startswith("#Person1#: Could I book a table for four")
    # The release's sentences, never re-split; a JSON-string list reads as the list.
    phi = next(row for row in rows(KEYFACT) if row["uid"] == "DISL_001" and row["model"] == "Phi-2")
    assert isinstance(phi["sentences"], str)
    summary = Summary.objects.get(document__uid="DISL_001", model="Phi-2")
    assert list(summary.sentences.order_by("index").values_list("text", flat=True)) == json.loads(phi["sentences"])
    # Candidates the validation kept are the human key-facts; the others are rejected.
    statuses = dict(KeyFact.objects.filter(document__uid="DISL_001").values_list("text", "status"))
    assert statuses["Fishermen welcomed it."] == KeyFact.Status.REJECTED
    assert statuses["The council voted to rebuild the pier."] == KeyFact.Status.ACCEPTED
    # Majority labels as published, marked with the release; no annotator label exists.
    source = next(row for row in rows(FAITHFULNESS) if row["uid"] == "DISL_003" and row["model"] == "GPT-4o")
    stored = ReleaseLabels.objects.get(summary__document__uid="DISL_003", summary__model="GPT-4o")
    assert stored.release == "UniSumEval-v1.0"
    assert stored.fact_verification_label == source["fact_verification_label"]
    assert stored.fact_verification_error_type == source["fact_verification_error_type"]
    assert stored.faithfulness_score == source["faithfulness_score"]
    assert not Label.objects.exists()
    assert label_source(project) == "release"
    # Machine scores as imported evaluator scores, the text of a Python dict read as the dict.
    llama = next(row for row in rows(KEYFACT) if row["uid"] == "DISL_001" and row["model"] == "Llama3-70b")
    assert isinstance(llama["machine_evaluation_results_completeness"], str)
    score = EvaluatorScore.objects.get(evaluator="G-Eval", summary__document__uid="DISL_001",
                                       summary__model="Llama3-70b")
    assert score.origin == EvaluatorScore.Origin.IMPORTED and score.details == {"release": "UniSumEval-v1.0"}
    assert score.completeness == eval(llama["machine_evaluation_results_completeness"])["G-Eval"]  # noqa: S307 (our own fixture)
    assert score.composite is None


def release_script_numbers(evaluator: str, dimension: str) -> dict[str, tuple]:
    """What the release's benchmark script reports, computed here from the files with SciPy: per source dataset,
    over the rows marked "success", Pearson and Spearman between the human and machine scores, and Spearman
    between the ranks of the summarizers' mean machine and mean human scores."""
    human_field, path = HUMAN[dimension]
    machine_field = f"machine_evaluation_results_{dimension}"
    by_source = defaultdict(list)
    for row in rows(path):
        if row["summary_success_state"] != "success":
            continue
        machine = row[machine_field]
        machine = machine if isinstance(machine, dict) else eval(machine)  # noqa: S307 (our own fixture)
        by_source[row["source"]].append((row["model"], row[human_field], machine[evaluator]))
    numbers = {}
    for source, points in by_source.items():
        human = [h for _, h, _ in points]
        machine = [m for _, _, m in points]
        models = sorted({model for model, _, _ in points})
        human_means = [np.mean([h for model, h, _ in points if model == m]) for m in models]
        machine_means = [np.mean([x for model, _, x in points if model == m]) for m in models]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SciPy warns on a constant column, and answers NaN as we do
            numbers[source] = (stats.pearsonr(human, machine), stats.spearmanr(human, machine),
                               stats.spearmanr(stats.rankdata(machine_means), stats.rankdata(human_means)),
                               len(points))
    return numbers


def same(ours: float, theirs: float) -> bool:
    return (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("evaluator", ["G-Eval", "G-Eval+"])
def test_the_evaluator_benchmark_computes_what_the_release_script_computes(project, evaluator):
    imported(project)
    analytics = project_analytics(project)
    assert analytics.label_source == "release" and len(analytics.summaries) == 16

    results = benchmark(project, evaluator, analytics)

    compared = 0
    for dimension in HUMAN:
        expected = release_script_numbers(evaluator, dimension)
        assert sorted(results[dimension].by_source) == sorted(expected) == ["CNNDM", "DialogSum", "XSum"]
        for source, (pearson, spearman, rank, n) in expected.items():
            levels = results[dimension].by_source[source]
            assert levels.summary_level.n == n
            assert same(levels.summary_level.statistic, pearson.statistic)
            assert same(levels.summary_level.p_value, pearson.pvalue)
            assert same(levels.summary_level_spearman.statistic, spearman.statistic)
            assert same(levels.summary_level_spearman.p_value, spearman.pvalue)
            assert same(levels.system_level.statistic, rank.statistic)
            assert same(levels.system_level.p_value, rank.pvalue)
            compared += not math.isnan(pearson.statistic)
    assert compared >= 8  # nearly every cell is defined; a constant evaluator column gives NaN on both sides
    # The News domain gathers two sources: it is not either of them.
    news = results["faithfulness"].by_domain["News"].summary_level
    assert news.n == 12 and results["faithfulness"].by_source["XSum"].summary_level.n == 4


def test_an_evaluator_constant_on_a_source_is_undefined_there_with_the_reason(project):
    imported(project)
    cnndm = benchmark(project, "G-Eval", project_analytics(project))["faithfulness"].by_source["CNNDM"]
    assert math.isnan(cnndm.summary_level.statistic)
    assert cnndm.summary_level.reason == "the evaluator scores are constant"


def test_sentence_level_detection_and_the_export_read_the_release_labels(project, tmp_path):
    imported(project)
    analytics = project_analytics(project)
    fv = {(row["uid"], row["model"]): row["fact_verification_label"] for row in rows(FAITHFULNESS)
          if row["summary_success_state"] == "success"}
    assert analytics.sentence_labels == {(uid, model, i): label for (uid, model), labels in fv.items()
                                         for i, label in enumerate(labels)}
    assert detection_report(project, analytics, ["G-Eval"]).single == {}  # imported scores are per summary only

    result = export_benchmark(project=project, out=tmp_path / "release.jsonl", options=ExportOptions(card=True))

    exported = [json.loads(line) for line in (tmp_path / "release.jsonl").read_text().splitlines()]
    assert result.label_source == "release" and len(exported) == 16
    by_key = {(row["uid"], row["model"]): row for row in exported}
    for row in rows(KEYFACT):
        if row["summary_success_state"] != "success":
            continue
        mine = by_key[row["uid"], row["model"]]
        assert (mine["keyfact"], mine["keyfact_label"], mine["sentence_label"], mine["completeness"],
                mine["conciseness"]) == (row["keyfact"], row["keyfact_label"], row["sentence_label"],
                                         row["completeness"], row["conciseness"])
        assert mine["fact_verification_label"] == fv[row["uid"], row["model"]]
    card = (tmp_path / "release.card.md").read_text()
    assert "**Labels read: release.** These are the majority labels" in card and "SIMULATED" not in card
    benchmark_file = json.loads((tmp_path / "release.evaluator_benchmark.json").read_text())
    xsum = next(r for r in benchmark_file["summary_level"] if r["evaluator"] == "G-Eval+"
                and r["dimension"] == "faithfulness" and r["group"] == "XSum")
    pearson = release_script_numbers("G-Eval+", "faithfulness")["XSum"][0]
    assert xsum["summary_pearson"] == round(pearson.statistic, 4)


def test_the_page_means_per_summarizer_are_the_means_of_the_file(project):
    imported(project)

    means = evaluator_means(project, "G-Eval+", project_analytics(project))

    assert means["dimensions"] == ["faithfulness", "completeness", "conciseness"]
    phi = [row for row in rows(FAITHFULNESS) if row["model"] == "Phi-2"]
    [row] = [row for row in means["rows"] if row["summarizer"] == "Phi-2"]
    assert row["summaries"] == 4
    assert row["cells"][:2] == pytest.approx([
        np.mean([r["machine_evaluation_results_faithfulness"]["G-Eval+"] for r in phi]),
        np.mean([r["faithfulness_score"] for r in phi])])


def test_the_analytics_page_names_the_release_as_the_label_source(client, project, manager):
    imported(project)
    client.force_login(manager)

    page = client.get(reverse("exports_analytics", args=[project.slug])).content.decode()

    assert "<strong>release</strong>" in page and "majority labels of a published release" in page
    assert "G-Eval+" in page and "there are no annotators' labels to measure agreement on" in page


def changed(path: Path, index: int, **values) -> list[dict]:
    data = rows(path)
    data[index].update(values)
    return data


def refused(project, **files) -> list[str]:
    with pytest.raises(DatasetError) as caught:
        imported(project, **files)
    assert not Document.objects.exists() and not ReleaseLabels.objects.exists()
    assert not EvaluatorScore.objects.exists() and not KeyFact.objects.exists()
    return [str(error) for error in caught.value.errors]


def test_bad_release_files_are_refused_with_file_line_and_field_and_nothing_is_written(project):
    faithfulness = rows(FAITHFULNESS)
    keyfact = rows(KEYFACT)
    assert refused(project, faithfulness=changed(FAITHFULNESS, 0, fact_verification_label=[0, 1])) == [
        "unisumeval_faithfulness.jsonl, line 1, field 'fact_verification_label': has 2 labels for 3 sentences"]
    without_text = [{k: v for k, v in row.items() if k != "input_context"} for row in faithfulness]
    no_text = [{k: v for k, v in row.items() if k != "input_context"} for row in keyfact]
    errors = refused(project, faithfulness=without_text, keyfact=no_text)
    assert errors[0] == ("unisumeval_faithfulness.jsonl, line 1, field 'input_context': missing: the source text "
                         "(input_context, or document) is needed to import the document")
    assert refused(project, keyfact=keyfact[1:]) == [
        "unisumeval_faithfulness.jsonl, line 1, field 'uid': uid 'DISL_001' and model 'GPT-4o' are not in "
        "unisumeval_keyfact.jsonl"]
    code = "__import__('os').system('touch /tmp/pwned')"
    errors = refused(project, faithfulness=changed(FAITHFULNESS, 2, machine_evaluation_results_faithfulness=code))
    assert errors == ["unisumeval_faithfulness.jsonl, line 3, field 'machine_evaluation_results_faithfulness': "
                      "must be an object {evaluator: score} (or its text)"]
    assert not Path("/tmp/pwned").exists()
    errors = refused(project, faithfulness=changed(FAITHFULNESS, 0, machine_evaluation_results_faithfulness={
        "sbertscore": 0.5, "G-Eval": float("inf")}, faithfulness_score=1.5))
    assert errors == [
        "unisumeval_faithfulness.jsonl, line 1, field 'faithfulness_score': must be from 0 to 1, got 1.5",
        "unisumeval_faithfulness.jsonl, line 1, field 'machine_evaluation_results_faithfulness': G-Eval: the score "
        "must be a finite number, or null or NaN when missing, got inf",
    ]
    errors = refused(project, keyfact=changed(KEYFACT, 1, keyfact=["Another fact."], keyfact_label=[1]))
    assert errors == ["unisumeval_keyfact.jsonl, field 'keyfact': differs between the rows of uid 'DISL_001' "
                      "(models 'GPT-4o' and 'Llama3-70b')"]
    errors = refused(project, keyfact=changed(KEYFACT, 0, summary="Another summary."))
    assert errors == ["unisumeval_keyfact.jsonl, line 1, field 'summary': differs from line 1 of "
                      "unisumeval_faithfulness.jsonl for uid 'DISL_001' and model 'GPT-4o'"]
    assert refused(project, faithfulness=changed(FAITHFULNESS, 0, input_type="Monologue"))[0].startswith(
        "unisumeval_faithfulness.jsonl, line 1, field 'input_type': must be one of dialogue, non-dialogue")
    # The corpus checks of the dataset import, reported at the release's line.
    long_ids = {}
    for path in (FAITHFULNESS, KEYFACT):
        long_ids[path] = rows(path)
        for row in long_ids[path]:
            if row["uid"] == "DISL_002":  # on every row of the document: its rows agree
                row["doc_id"] = "x" * 300
    errors = refused(project, faithfulness=long_ids[FAITHFULNESS], keyfact=long_ids[KEYFACT])
    assert errors[0].startswith("unisumeval_faithfulness.jsonl, line 5, field 'doc_id': is 300 characters")


def test_fields_the_import_does_not_read_are_named(project):
    faithfulness = changed(FAITHFULNESS, 3, annotator_count=3)

    result = imported(project, faithfulness=faithfulness)

    assert result.ignored_fields == ["annotator_count"] and result.summaries == 16


def test_a_missing_label_list_is_reported_once(project):
    keyfact = rows(KEYFACT)
    del keyfact[2]["sentence_label"]
    assert refused(project, keyfact=keyfact) == [
        "unisumeval_keyfact.jsonl, line 3, field 'sentence_label': missing required field"]


def test_a_release_goes_into_a_new_project_only(project, tmp_path):
    imported(project)
    with pytest.raises(DatasetError) as caught:
        imported(project)
    assert [str(error) for error in caught.value.errors] == [
        "project 'alpha' already has documents: import a release into a new project, so that its labels are never "
        "mixed with others"]
    assert ReleaseLabels.objects.count() == 16

    call_command("import_release", str(FOLDER), "--project", "unisumeval", verbosity=0)
    assert Project.objects.get(slug="unisumeval").release_labels.count() == 16
    with pytest.raises(CommandError, match="exists: a release goes into a new project"):
        call_command("import_release", str(FOLDER), "--project", "unisumeval", verbosity=0)
    (tmp_path / "unisumeval_faithfulness.jsonl").write_text("{}\n")
    (tmp_path / "unisumeval_keyfact.jsonl").write_bytes(KEYFACT.read_bytes())
    with pytest.raises(CommandError, match="nothing imported"):
        call_command("import_release", str(tmp_path), "--project", "broken", verbosity=0)
    assert not Project.objects.filter(slug="broken").exists()  # the project goes with its release or not at all
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_release", str(tmp_path / "nowhere"), "--project", "other", verbosity=0)
