"""Table 2 of the paper (agreement per task and domain) on the analytics page, its CSV and the dataset card, against
Krippendorff's alpha worked by hand.

Two annotators label every fact-verification unit (True = an error). Nominal alpha for two coders and two values:
alpha = 1 - (n - 1) * (o_01 + o_10) / (2 * n_0 * n_1), with n the values, n_0 and n_1 the values of each kind, and
each unit where the two disagree adding 1 to o_01 and 1 to o_10.

    news     short, non-dialogue   a T T F F     b T F F F     n 8, n_1 3, n_0 5, 1 split: 1 - 7 * 2 / 30 = 0.533
    meeting  short, dialogue       a T T F F     b T T F F     no split: 1
    report   long (5,000 words)    a T F T F F   b F F T F F   n 10, n_1 3, n_0 7, 1 split: 1 - 9 * 2 / 42 = 0.571

Avg. IAA, the mean over the domains: (0.5333 + 1 + 0.5714) / 3 = 0.7016. Pooled over the 13 units: n 26, n_1 10,
n_0 16, 2 splits: 1 - 25 * 4 / 320 = 0.6875.

Key-fact validation, in news only (True = useful), Gwet's AC1 for two raters: a T T T F, b T T T T. Observed
agreement 3/4; the share of "useful" over both raters pi = 7/8, chance agreement 2 pi (1 - pi) = 14/64; AC1 =
(3/4 - 14/64) / (1 - 14/64) = 0.68, the same pooled and as the mean (one domain).
"""

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Annotator, Assignment, Hit, Label, Task, Unit
from corpus.models import Document, KeyFact
from exports.analytics import project_analytics
from exports.card import dataset_card
from exports.figures import figures_compute, table_from
from exports.report import agreement_report

from .labels import annotate, fv_units
from .test_paper_tables import LABELS, TEXTS, release

pytestmark = pytest.mark.usefixtures("numbers_worker")

ANSWERS = {"news": ([True, True, False, False], [True, False, False, False]),
           "meeting": ([True, True, False, False], [True, True, False, False]),
           "report": ([True, False, True, False, False], [False, False, True, False, False])}


@pytest.fixture
def rated(project):
    for domain, (first, second) in ANSWERS.items():
        hit, units = fv_units(project, len(first), domain=domain)
        annotate(hit, units, first, name="a")
        annotate(hit, units, second, name="b")
    news = Document.objects.get(project=project, domain="news")
    hit = Hit.objects.create(project=project, task=Task.KEYFACT_VALIDATION, document=news, position=3)
    units = [Unit.objects.create(hit=hit, task=Task.KEYFACT_VALIDATION, position=index, text=f"Fact {index}.",
                                 keyfact=KeyFact.objects.create(document=news, index=index, text=f"Fact {index}.",
                                                                origin=KeyFact.Origin.GENERATED))
             for index in range(4)]
    for name, useful in {"a": [True, True, True, False], "b": [True, True, True, True]}.items():
        annotator = Annotator.objects.get(external_id=name)
        assignment = Assignment.objects.create(hit=hit, annotator=annotator, status=Assignment.Status.SUBMITTED,
                                               expires_at=timezone.now(), submitted_at=timezone.now())
        Label.objects.bulk_create([Label(assignment=assignment, unit=unit, annotator=annotator, useful=answer)
                                   for unit, answer in zip(units, useful)])
    Document.objects.filter(project=project, domain="meeting").update(input_type="dialogue")
    Document.objects.filter(project=project, domain="report").update(word_count=5000)
    return project


def test_table_2_gives_each_domain_under_short_or_long_and_the_mean(rated):
    figures = figures_compute(rated, include_simulated=False)
    rows = table_from(figures, "agreement-by-domain")
    assert list(rows[0]) == ["Evaluation dim.", "Annotation task", "Granularity", "Short news", "Short meeting",
                             "Long report", "Avg. IAA"]
    assert [list(row.values()) for row in rows] == [
        ["Faithfulness", "Fact verification", "Sentence level", 0.53, 1.0, 0.57, 0.7],
        ["Completeness & conciseness", "Key-fact validation", "Key-fact level", 0.68, None, None, 0.68]]
    table = next(table for table in figures["page"]["paper_tables"] if table["csv"] == "agreement-by-domain")
    assert [cell["text"] for cell in table["rows"][0]["cells"]] == [
        "Faithfulness", "Fact verification", "Sentence level", "0.53", "1.00", "0.57", "0.70"]
    assert [cell["num"] for cell in table["rows"][0]["cells"]] == [False] * 3 + [True] * 4
    assert [[cell["text"] for cell in level] for level in table["head"]] == [
        ["", "Short", "Long", ""], ["Evaluation dim.", "Annotation task", "Granularity", "news", "meeting", "report",
                                    "Avg. IAA"]]
    assert table["head"][0][1]["span"] == 2
    assert [cell["text"] for cell in table["rows"][1]["cells"]][3:] == ["0.68", "—", "—", "0.68"]
    assert "Pooled over all units instead: fact verification 0.69; key-fact validation 0.68." in table["note"]
    assert "report long (5,000 words)" in table["note"]
    assert "Table 2" not in " ".join(figures["page"]["paper_tables_missing"])


def test_table_2_on_the_page_in_its_csv_and_in_the_card(client, rated, manager):
    client.force_login(manager)
    page = client.get(reverse("exports_analytics", args=[rated.slug])).content.decode()
    assert "Table 2: agreement of the human labels per task and domain" in page
    assert '<td class="num">0.53</td><td class="num">1.00</td><td class="num">0.57</td>' in page
    text = client.get(reverse("exports_table_csv", args=[rated.slug, "agreement-by-domain"])).content.decode()
    assert text.splitlines() == [
        '"Evaluation dim.","Annotation task","Granularity","Short news","Short meeting","Long report","Avg. IAA"',
        '"Faithfulness","Fact verification","Sentence level",0.53,1.0,0.57,0.7',
        '"Completeness & conciseness","Key-fact validation","Key-fact level",0.68,"","",0.68']
    card = dataset_card(rated, project_analytics(rated), agreement_report(rated, n_boot=10), 3)
    section = card.split("## The paper's result tables", 1)[1]
    assert ("| Evaluation dim. | Annotation task | Granularity | Short news | Short meeting | Long report | Avg. IAA |"
            in section)
    assert "| Faithfulness | Fact verification | Sentence level | 0.53 | 1.00 | 0.57 | 0.70 |" in section
    assert "| Completeness & conciseness | Key-fact validation | Key-fact level | 0.68 | — | — | 0.68 |" in section
    assert section.index("Table 2:") < section.index("hallucinates")


def test_without_annotators_labels_table_2_is_said_to_be_missing(client, project, manager):
    released = release(project, [(*text, "") for text in TEXTS], LABELS)
    figures = figures_compute(released, include_simulated=False)
    assert table_from(figures, "agreement-by-domain") is None
    client.force_login(manager)
    page = client.get(reverse("exports_analytics", args=[released.slug])).content.decode()
    assert "Not given: Table 2 (agreement per domain) needs two annotators&#x27; labels on a unit" in page
    card = dataset_card(released, project_analytics(released), agreement_report(released, n_boot=10), 10)
    assert "Not given: Table 2 (agreement per domain) needs two annotators' labels on a unit" in card
    assert client.get(reverse("exports_table_csv", args=[released.slug, "agreement-by-domain"])).status_code == 404
