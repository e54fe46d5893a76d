"""Dawid-Skene beside majority vote: on the analytics page, in its CSV and in the export, on a spammer checked by hand.

`with_spammer` (conftest): ten FV sentences; careful-a, careful-b, careful-c and a spammer who says "error" on every
sentence it sees, having passed all 5 of its attention checks. Majority labels: sentences 6 and 7 have an error,
0-5 and 8 none, and sentence 9 (careful-a: no error; careful-b and the spammer: error) has one by 2 votes to 1.

Dawid-Skene, by hand, near where its EM settles (the other sentences are unanimous among the careful annotators, so
their labels are the majority's; smoothing s = 0.01 left out): the spammer said "error" on all 7 error-free sentences
it saw and on both with an error, so its "error" is no evidence (likelihood ratio 1); careful-b said "error" on 2 of
8 error-free sentences (8 and 9) and on 2 of 2 with one: ratio 1 / (2/8) = 4; careful-a said "no error" on none of
the 2 with an error and on all 8 without: ratio about s / 2 ~ 1/200 to 1/100; prior odds 2/8. Posterior odds of an
error in sentence 9: 1/4 * 4 * 1 * (1/200 .. 1/100) ~ 0.005-0.01. Dawid-Skene says no error there: it differs from
the majority on 1 sentence of 10. The spammer's estimated specificity (saying "no error" when there is none) is ~0,
its sensitivity ~1; careful-a's are both ~1.
"""

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation.models import Annotator, Task, Unit
from exports.aggregation import DAWID_SKENE_FIELDS, RELEASE_FIELDS
from exports.export import ExportOptions, export_benchmark
from exports.second_opinion import annotator_rows, second_opinions
from exports.selectors import REAL

from .conftest import SPAMMER_ANSWERS

pytestmark = pytest.mark.usefixtures("numbers_worker")

SPAMMER = "spam-worker-77"


def pseudonym(name: str) -> str:
    return Annotator.objects.get(external_id=name).pseudonym


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_dawid_skene_overrules_the_spammers_majority_on_one_sentence(with_spammer):
    opinion = second_opinions(with_spammer, REAL)["fv"]
    assert opinion.label.tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 0, 0]  # the majority: ... 1, 1, 0, 1
    assert opinion.posterior[9] == pytest.approx(0.0075, abs=0.0035)
    assert (opinion.differs, opinion.decided, opinion.differs_share) == (1, 10, 0.1)
    assert opinion.converged and opinion.iterations < 100
    rows = {row["annotator"]: row for row in annotator_rows(with_spammer, {"fv": opinion})}
    spammer, careful = rows[pseudonym(SPAMMER)], rows[pseudonym("careful-a")]
    assert spammer["specificity"] < 0.01 and spammer["sensitivity"] > 0.99
    assert careful["specificity"] > 0.99 and careful["sensitivity"] > 0.99
    assert (spammer["checks_passed"], spammer["checks"], spammer["check_pass_rate"]) == (5, 5, 1.0)
    assert rows[pseudonym("careful-b")]["check_pass_rate"] == 0.75
    assert rows[pseudonym("careful-b")]["specificity"] == pytest.approx(6 / 8, abs=0.01)
    assert list(rows)[0] == pseudonym(SPAMMER)  # least informative first


def test_an_ai_pre_label_is_never_a_vote(with_spammer):
    before = second_opinions(with_spammer, REAL)["fv"]
    # The AI says "error" on every sentence: a judgment shown to annotators, not a label.
    Unit.objects.filter(task=Task.FACT_VERIFICATION).update(ai_category="entity_error", ai_reason="All wrong.")
    after = second_opinions(with_spammer, REAL)["fv"]
    assert after.label.tolist() == before.label.tolist()
    assert after.posterior.tolist() == before.posterior.tolist()
    assert len(after.annotators) == len(SPAMMER_ANSWERS)


def test_the_page_shows_the_share_and_each_annotators_estimates(client, with_spammer, manager):
    client.force_login(manager)
    html = client.get(reverse("exports_analytics", args=[with_spammer.slug])).content.decode()
    section = html[html.index('id="dawid-skene"'):html.index('id="scores"')]
    assert "Majority vote is the label of record (the paper's); Dawid-Skene" in section
    assert "is a second opinion" in section and "an AI pre-label is never a vote" in section
    assert "differs from the majority label on <strong>10.0%</strong> of units (1 of 10" in section
    assert "Converged after" in section
    rows = section[section.index("<tbody>"):section.index("</tbody>")].split("<tr>")[1:]
    assert len(rows) == 4
    cells = {row.split("</td>")[0].removeprefix("<td>"): row for row in rows}
    spammer = cells[pseudonym(SPAMMER)]
    # labels, sensitivity, specificity, attention checks passed
    assert '<td class="num">9</td><td class="num">1.00</td><td class="num">0.00</td>' in spammer
    assert "100% (5 of 5)" in spammer
    assert "75% (3 of 4)" in cells[pseudonym("careful-b")]
    for name in SPAMMER_ANSWERS:  # pseudonyms only, never the worker ids
        assert name not in html


def test_the_csv_has_a_row_per_task_and_annotator(client, with_spammer, manager):
    client.force_login(manager)
    response = client.get(reverse("exports_table_csv", args=[with_spammer.slug, "dawid-skene"]))
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["annotator"] for row in rows][0] == pseudonym(SPAMMER)
    assert {(row["task"], row["checks"]) for row in rows} == {("fv", "5"), ("fv", "4"), ("fv", "2")}
    assert SPAMMER not in response.content.decode()


def test_the_export_carries_dawid_skene_beside_unchanged_release_fields(with_spammer, tmp_path):
    plain = export_benchmark(project=with_spammer, out=tmp_path / "plain" / "b.jsonl", options=ExportOptions())
    second = export_benchmark(project=with_spammer, out=tmp_path / "ds" / "b.jsonl",
                              options=ExportOptions(dawid_skene=True, card=True, tables="csv"))
    assert [path.name for path in plain.files] == ["b.jsonl"]
    assert {"b.jsonl", "b.dawid_skene.json", "b.dawid_skene.csv", "b.card.md"} <= {p.name for p in second.files}
    [without], [row] = read_jsonl(tmp_path / "plain" / "b.jsonl"), read_jsonl(tmp_path / "ds" / "b.jsonl")
    # The release fields (and everything else the plain export writes) are the same, in the same order.
    assert {name: value for name, value in row.items() if name not in DAWID_SKENE_FIELDS} == without
    assert list(row)[:len(without)] == list(without) and set(RELEASE_FIELDS) <= set(row)
    assert row["fact_verification_label"] == [0, 0, 0, 0, 0, 0, 1, 1, 0, 1]
    assert row["fact_verification_label_dawid_skene"] == [0, 0, 0, 0, 0, 0, 1, 1, 0, 0]
    posteriors = row["fact_verification_posterior_dawid_skene"]
    assert posteriors[9] == pytest.approx(0.0075, abs=0.0035) and posteriors[6] == 1.0 and posteriors[0] == 0.0
    assert row["keyfact_validation_label_dawid_skene"] == row["keyfact_alignment_label_dawid_skene"] == []

    summary = json.loads((tmp_path / "ds" / "b.dawid_skene.json").read_text())
    assert summary["tasks"] == [{"task": "fv", "units": 10, "decided": 10, "differs": 1, "differs_share": 0.1,
                                 "iterations": summary["tasks"][0]["iterations"], "converged": True,
                                 "max_iterations": 1000}]
    by_name = {row["annotator"]: row for row in summary["annotators"]}
    assert by_name[pseudonym(SPAMMER)]["specificity"] < 0.01
    card = (tmp_path / "ds" / "b.card.md").read_text()
    assert "## Dawid-Skene, a second opinion" in card and "`fact_verification_label_dawid_skene`" in card
    assert "| Fact verification | 10 | 1 | 10.0% | yes," in card
    exported = "".join(path.read_text() for path in second.files)
    for name in SPAMMER_ANSWERS:
        assert name not in exported


def test_the_export_reads_dawid_skene_per_item_on_every_task(tmp_path, project):
    """On simulated labels of all three tasks: a label and a posterior for every item with a majority label, in the
    release's shapes, and the same whatever the chunking."""
    from exports import aggregation
    from exports.simulate import simulate_annotations
    from tests.work import import_generated

    import_generated(project, documents=3, summarizers=2, sentences=3)
    simulate_annotations(project=project, annotators=3, accuracy=0.8, seed=4)
    options = ExportOptions(dawid_skene=True)
    export_benchmark(project=project, out=tmp_path / "a.jsonl", options=options)
    rows = read_jsonl(tmp_path / "a.jsonl")
    assert rows
    for row in rows:
        for task, majority in (("fact_verification", row["fact_verification_label"]),
                               ("keyfact_validation", row["keyfact_validation_label"])):
            labels, posteriors = row[f"{task}_label_dawid_skene"], row[f"{task}_posterior_dawid_skene"]
            assert len(labels) == len(posteriors) == len(majority)
            assert all((label is None) == (vote is None) for label, vote in zip(labels, majority))
            assert all(label == int(p > 0.5) for label, p in zip(labels, posteriors) if label is not None)
        matrix = row["keyfact_alignment_label"]
        assert len(matrix) == len(row["keyfact"]) and all(len(cells) == len(row["sentences"]) for cells in matrix)
        assert [len(cells) for cells in row["keyfact_alignment_label_dawid_skene"]] == [len(c) for c in matrix]
    assert any(row["keyfact_alignment_label_dawid_skene"] for row in rows)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(aggregation, "DOCUMENT_CHUNK", 1)
        export_benchmark(project=project, out=tmp_path / "b.jsonl", options=options)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
