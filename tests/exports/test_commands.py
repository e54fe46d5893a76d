"""The exports commands: --help, output, and a clear error with a non-zero exit on bad input."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from assist.models import EvaluatorScore


@pytest.mark.parametrize("command", ["agreement", "export_benchmark", "import_evaluator_scores",
                                     "simulate_annotations", "import_benchmark"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        call_command(command, "--help")
    assert exit_.value.code == 0
    assert "--project" in capsys.readouterr().out


@pytest.mark.parametrize("command,args", [
    ("agreement", []), ("export_benchmark", ["--out", "x.jsonl"]), ("simulate_annotations", []),
])
def test_an_unknown_project_is_a_clear_error(db, command, args):
    with pytest.raises(CommandError, match="no project with slug 'nope'"):
        call_command(command, "--project", "nope", *args)


def test_agreement_prints_json(labelled, capsys):
    # `labelled`: a and b, who submitted first, agree on all four sentences (alpha 1); with c, alpha is 7/18
    # (tests/exports/test_report.py).
    call_command("agreement", "--project", labelled.slug, "--json", "--n-boot", "50")
    report = json.loads(capsys.readouterr().out)
    assert report["label_source"] == "real"
    assert report["headline_labels"] == "first two counted labels of each unit"
    overall = report["rows"][0]
    assert (overall["task"], overall["breakdown"], overall["primary_value"]) == ("fv", "overall", 1.0)
    assert (overall["n_units"], overall["n_ratings"], overall["labels"]) == (
        4, 8, "first two counted labels of each unit")
    assert (overall["all_labels_primary_value"], overall["all_labels_n_ratings"]) == (0.3889, 12)
    assert overall["all_labels_secondary_value"] == 0.3333  # Gwet's AC1, 1/3


def test_agreement_prints_a_table(labelled, capsys):
    call_command("agreement", "--project", labelled.slug, "--n-boot", "0")
    out = capsys.readouterr().out
    assert "Fact verification" in out and "paper: 0.60" in out
    assert "Headline: first two counted labels of each unit" in out
    overall = next(line for line in out.splitlines() if line.strip().startswith("overall"))
    assert overall.split() == ["overall", "4", "8", "1.000", "1.000", "|", "12", "0.389", "0.333"]


def test_export_refuses_a_bad_s3_url(labelled, tmp_path):
    with pytest.raises(CommandError, match="s3://bucket"):
        call_command("export_benchmark", "--project", labelled.slug, "--out", str(tmp_path / "b.jsonl"),
                     "--s3", "http://example.com/x")


def test_export_writes_the_files(labelled, tmp_path, capsys):
    call_command("export_benchmark", "--project", labelled.slug, "--out", str(tmp_path / "b.json"), "--card",
                 "--tables", "parquet", "--checks", "--annotator-labels", "--dawid-skene", verbosity=0)
    [row] = json.loads((tmp_path / "b.json").read_text())
    assert row["faithfulness_score"] == 0.5
    assert row["fact_verification_label_dawid_skene"] == row["fact_verification_label"] == [1, 0, 1, 0]
    assert {p.name for p in tmp_path.iterdir()} >= {"b.json", "b.card.md", "b.labels.parquet", "b.summaries.parquet",
                                                    "b.dawid_skene.json", "b.dawid_skene.parquet"}


def test_simulate_refuses_a_bad_accuracy(labelled):
    with pytest.raises(CommandError, match="accuracy"):
        call_command("simulate_annotations", "--project", labelled.slug, "--accuracy", "1.5")


def test_evaluator_import_reports_every_bad_row_and_writes_nothing(labelled, tmp_path, capsys):
    path = tmp_path / "scores.csv"
    path.write_text("uid,model,faithfulness,extra\ndoc-news,m,abc,1\nmissing,m,0.5,\n")
    with pytest.raises(CommandError, match="nothing imported: 4 problem"):
        call_command("import_evaluator_scores", str(path), "--project", labelled.slug, "--evaluator", "e")
    err = capsys.readouterr().err
    assert "line 2, field 'extra': unknown column" in err
    assert "line 2, field 'faithfulness': must be a number" in err
    assert "line 3, field 'uid': no summary of document 'missing'" in err
    assert not EvaluatorScore.objects.exists()


def test_evaluator_import_stores_the_scores(labelled, tmp_path, capsys):
    path = tmp_path / "scores.jsonl"
    path.write_text(json.dumps({"uid": "doc-news", "model": "m", "faithfulness": 0.7, "composite": None}) + "\n")
    call_command("import_evaluator_scores", str(path), "--project", labelled.slug, "--evaluator", "e")
    score = EvaluatorScore.objects.get()
    assert (score.evaluator, score.faithfulness, score.composite) == ("e", 0.7, None)
    call_command("import_evaluator_scores", str(path), "--project", labelled.slug, "--evaluator", "e")
    assert EvaluatorScore.objects.count() == 1


def test_import_benchmark_refuses_an_existing_project(labelled, tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_text("{}\n")
    with pytest.raises(CommandError, match="exists"):
        call_command("import_benchmark", str(path), "--project", labelled.slug)
