"""Imported evaluators keep their names as written ("G-Eval (GPT-4)", as the UniSumEval release names them): shown
escaped on the page, downloadable as CSV without a cell a spreadsheet would run, and in the card's tables intact."""

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from assist.models import EvaluatorScore
from corpus.importing import DatasetError
from exports.analytics import project_analytics
from exports.card import dataset_card
from exports.evaluators import import_evaluator_scores
from exports.report import agreement_report
from exports.tables import evaluator_benchmark_tables

from .test_paper_tables_summarizers import FAITHFUL, summarized  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("numbers_worker")

NAMED = "G-Eval (GPT-4)"
HOSTILE = '=cmd|"/C calc"!A0 <b>bold</b>'


def scores(evaluator_scale: float = 1.0) -> bytes:
    """Faithfulness per summary, as the human scores (the fixture's t1-t4 per summarizer) but on another scale."""
    rows = [["uid", "model", "faithfulness"]]
    rows += [[f"t{index + 1}", model, value * evaluator_scale] for model, values in FAITHFUL.items()
             for index, value in enumerate(values)]
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue().encode()


def upload(client, project, name: str):
    return client.post(reverse("exports_evaluator_upload", args=[project.slug]),
                       {"evaluator": name, "file": SimpleUploadedFile("scores.csv", scores(5))}, follow=True)


def test_a_name_with_spaces_and_brackets_is_kept_trimmed_and_shown_as_written(client, summarized, manager):
    client.force_login(manager)
    page = upload(client, summarized, f"  {NAMED}  ").content.decode()
    assert f"Imported the scores of {NAMED} for 12 summaries." in page
    assert set(EvaluatorScore.objects.values_list("evaluator", flat=True)) == {NAMED}
    page = client.get(reverse("exports_analytics", args=[summarized.slug])).content.decode()
    link = reverse("exports_table_csv", args=[summarized.slug, f"evaluator-{NAMED}"])
    assert f"<h3>{NAMED} <a" in page and f'href="{link}"' in page
    response = client.get(link)
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{summarized.slug}-evaluator-{NAMED}.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    overall = next(row for row in rows if row["group_by"] == "overall" and row["dimension"] == "faithfulness")
    # The same numbers on five times the scale: the correlation with the human scores is 1.
    assert overall["evaluator"] == NAMED and float(overall["summary_pearson"]) == pytest.approx(1.0)


def test_a_hostile_name_is_escaped_on_the_page_and_neutralised_in_its_csv_and_card(client, summarized, manager):
    client.force_login(manager)
    page = upload(client, summarized, HOSTILE).content.decode()
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    response = client.get(reverse("exports_table_csv", args=[summarized.slug, f"evaluator-{HOSTILE}"]))
    assert response.status_code == 200
    # The slash cannot name a folder, and the quote cannot end the header's file name early.
    assert response["Content-Disposition"] == (
        f'attachment; filename="{summarized.slug}-evaluator-=cmd|\\"-C calc\\"!A0 <b>bold<-b>.csv"')
    cells = [row[0] for row in csv.reader(io.StringIO(response.content.decode()))][1:]
    assert cells and set(cells) == {"'" + HOSTILE}
    analytics = project_analytics(summarized)
    card = dataset_card(summarized, analytics, agreement_report(summarized, n_boot=10), 12,
                        evaluators=evaluator_benchmark_tables(summarized, analytics))
    row = next(line for line in card.splitlines() if line.startswith("| =cmd"))
    # The pipe is escaped, so the row keeps its eight cells.
    assert row.startswith('| =cmd\\|"/C calc"!A0 <b>bold</b> | faithfulness |')
    assert row.replace("\\|", "").count("|") == 9


@pytest.mark.parametrize("name, message", [
    ("   ", "the evaluator needs a name"),
    ("x" * 101, "the evaluator's name is 101 characters; the limit is 100"),
    ("two\nlines", "the evaluator's name holds a control character (U+000A) at character 4"),
    ("tab\tbed", "holds a control character (U+0009)"),
])
def test_empty_overlong_and_multiline_names_are_refused(summarized, name, message):
    with pytest.raises(DatasetError) as refused:
        import_evaluator_scores(project=summarized, evaluator=name, data=scores(), filename="s.csv")
    assert message in str(refused.value.errors[0])
    assert not EvaluatorScore.objects.exists()


def test_a_name_of_the_longest_length_with_letters_beyond_ascii_is_kept(summarized):
    name = "Évaluateur « maison » " + "é" * 78
    assert len(name) == 100
    assert import_evaluator_scores(project=summarized, evaluator=name, data=scores(), filename="s.csv") == 12
    assert EvaluatorScore.objects.filter(evaluator=name).count() == 12
