"""Figure 3 (each summarizer's rank per dimension) and table 13 (faithfulness against abstractiveness) of the paper on
the analytics page, their CSVs and the dataset card, against numbers worked by hand.

Four source texts, all "a b c d": t1 and t2 news, t3 and t4 meeting. Each summary is one or two words, so its
abstractiveness is its share of words not in the source (no 3- or 5-gram exists: the mean runs over N_1 alone).
Per summary: text, abstractiveness, the error labels of its sentences, faithfulness, completeness, conciseness.

    A  t1 "a b" 0    [0, 0] 1     1   1     t2 "a x" .5  [0, 1] .5  .5  .5
       t3 "x y" 1    [1, 1] 0     .5  1     t4 "b y" .5  [0, 0] 1   1   .5
    B  t1 "a b" 0    [0]    1     .5  1     t2 "x y" 1   [1]    0   .5  .5
       t3 "a x" .5   [0, 1] .5    1   1     t4 "a b" 0   [0, 0] 1   0   0
    C  t1 "x"   1    [0]    1     0   0     t2 "b"   0   [0]    1   .5  1
       t3 "a"   0    [0]    1     1   1     t4 "y z" 1   [0]    1   .5  .5

Means per domain (news, meeting), in %:
    A  faithfulness 75, 50 -> 62.5   completeness 75, 75 -> 75   conciseness 75, 75 -> 75
       composite 75, 66.67: domain stability 100 - 8.33 = 91.7   abstractiveness (0 + .5 + 1 + .5) / 4 = 50
    B  faithfulness 50, 75 -> 62.5   completeness 50, 50 -> 50   conciseness 75, 50 -> 62.5
       composite 58.33, 58.33: domain stability 100              abstractiveness (0 + 1 + .5 + 0) / 4 = 37.5
    C  faithfulness 100, 100 -> 100  completeness 25, 75 -> 50   conciseness 50, 75 -> 62.5
       composite 58.33, 83.33: domain stability 75               abstractiveness (1 + 0 + 0 + 1) / 4 = 50
"""

import math

import pytest
from django.urls import reverse

from corpus.models import Document, Summary
from exports.analytics import project_analytics
from exports.card import dataset_card
from exports.figures import figures_compute, table_from
from exports.models import ReleaseLabels
from exports.report import agreement_report

pytestmark = pytest.mark.usefixtures("numbers_worker")

SOURCE = "a b c d"
DOMAINS = {"t1": "news", "t2": "news", "t3": "meeting", "t4": "meeting"}
SUMMARIES = {
    "A": {"t1": ("a b", [0, 0], 1, 1), "t2": ("a x", [0, 1], .5, .5), "t3": ("x y", [1, 1], .5, 1),
          "t4": ("b y", [0, 0], 1, .5)},
    "B": {"t1": ("a b", [0], .5, 1), "t2": ("x y", [1], .5, .5), "t3": ("a x", [0, 1], 1, 1),
          "t4": ("a b", [0, 0], 0, 0)},
    "C": {"t1": ("x", [0], 0, 0), "t2": ("b", [0], .5, 1), "t3": ("a", [0], 1, 1), "t4": ("y z", [0], .5, .5)},
}
# Faithfulness and abstractiveness of each summary, t1 to t4, from the table above.
FAITHFUL = {"A": [1, .5, 0, 1], "B": [1, 0, .5, 1], "C": [1, 1, 1, 1]}
ABSTRACT = {"A": [0, .5, 1, .5], "B": [0, 1, .5, 0], "C": [1, 0, 0, 1]}


@pytest.fixture
def summarized(project):
    for uid, domain in DOMAINS.items():
        document = Document.objects.create(project=project, uid=uid, doc_id=uid, source="S", domain=domain,
                                           input_type="non-dialogue" if domain == "news" else "dialogue",
                                           length="short", text=SOURCE, word_count=4, text_sha256=uid)
        for model, by_text in SUMMARIES.items():
            text, fv, complete, concise = by_text[uid]
            summary = Summary.objects.create(document=document, model=model, text=text, text_sha256=uid + model)
            ReleaseLabels.objects.create(project=project, summary=summary, release="test", fact_verification_label=fv,
                                         fact_verification_error_type=[[] for _ in fv],
                                         faithfulness_score=1 - sum(fv) / len(fv), completeness=complete,
                                         conciseness=concise)
    return project


def pearson(xs: list[float], ys: list[float]) -> float:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    return sxy / math.sqrt(sum((x - mx) ** 2 for x in xs) * sum((y - my) ** 2 for y in ys))


def two_sided_p(r: float, n: int) -> float:
    """Student's t with an even number of degrees of freedom in closed form: with t = r sqrt(df / (1 - r^2)) and
    theta = atan(|t| / sqrt(df)), P(|T| < t) = sin(theta) (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ... up to cos^(df-2))."""
    df = n - 2
    assert df % 2 == 0
    theta = math.atan(abs(r) * math.sqrt(df / (1 - r * r)) / math.sqrt(df))
    term, total = 1.0, 1.0
    for k in range(1, df // 2):
        term *= (2 * k - 1) / (2 * k) * math.cos(theta) ** 2
        total += term
    return 1 - math.sin(theta) * total


def test_figure_3_ranks_each_summarizer_per_dimension(summarized):
    figures = figures_compute(summarized, include_simulated=False)
    rows = table_from(figures, "summarizer-ranks")
    assert list(rows[0]) == ["Summarizer", "Faithfulness", "Completeness", "Conciseness", "Domain stability",
                             "Abstractiveness"]
    # Faithfulness: C 100, then A and B tied at 62.5; completeness A 75, then B and C at 50; conciseness A 75,
    # then B and C at 62.5; domain stability B 100, A 91.7, C 75; abstractiveness A and C at 50, B 37.5.
    assert [list(row.values()) for row in rows] == [["A", 2, 1, 1, 2, 1], ["B", 2, 2, 2, 1, 3],
                                                    ["C", 1, 2, 2, 3, 1]]
    table = next(table for table in figures["page"]["paper_tables"] if table["csv"] == "summarizer-ranks")
    assert [cell["text"] for cell in table["rows"][1]["cells"]] == ["B", "2", "2", "2", "1", "3"]
    chart = table["chart"]
    assert [label["text"] for label in chart["column_labels"]] == [
        "Faithfulness", "Completeness", "Conciseness", "Domain stability", "Abstractiveness"]
    # Rank 1 of 3 the darkest, 3 the lightest, 2 half-way.
    assert [(cell["text"], cell["cls"]) for cell in chart["cells"][5:10]] == [
        ("2", "heat-4"), ("2", "heat-4"), ("2", "heat-4"), ("1", "heat-9"), ("3", "heat-0")]


def test_table_13_correlates_faithfulness_with_abstractiveness(summarized):
    figures = figures_compute(summarized, include_simulated=False)
    rows = table_from(figures, "faithfulness-abstractiveness")
    assert list(rows[0]) == ["Summarizer", "ρ", "p < 0.05", "p", "Summaries"]
    r_a = pearson(FAITHFUL["A"], ABSTRACT["A"])  # -0.5 / sqrt(0.6875 * 0.5) = -0.853
    pooled = pearson(sum(FAITHFUL.values(), []), sum(ABSTRACT.values(), []))  # -1.125 / sqrt(1.75 * 2.2292)
    assert round(r_a, 2) == -0.85 and round(pooled, 2) == -0.57
    # With four summaries p = 1 - |r|; B's abstractiveness is exactly 1 - faithfulness (r = -1, p = 0); C is
    # always faithful, so there is nothing to correlate.
    assert round(two_sided_p(r_a, 4), 6) == round(1 - abs(r_a), 6)
    assert [list(row.values()) for row in rows] == [
        ["A", -0.85, "", round(1 - abs(r_a), 4), 4], ["B", -1.0, "*", 0.0, 4], ["C", None, "", None, 4],
        ["All summarizers", -0.57, "", round(two_sided_p(pooled, 12), 4), 12]]
    assert 0.05 < two_sided_p(pooled, 12) < 0.06


def test_figure_3_and_table_13_on_the_page_in_their_csvs_and_in_the_card(client, summarized, manager):
    client.force_login(manager)
    page = client.get(reverse("exports_analytics", args=[summarized.slug])).content.decode()
    assert "Figure 3: rank (1 = best) of each summarizer" in page
    assert 'class="chart rank-chart"' in page and "<title>C: rank 3 of 3 in domain stability</title>" in page
    assert "Table 13: Pearson correlation between the faithfulness and the abstractiveness" in page
    assert '<th scope="row">B</th><td class="num">-1.00</td><td class="num">*</td><td class="num">0.0000</td>' in page
    ranks = client.get(reverse("exports_table_csv", args=[summarized.slug, "summarizer-ranks"])).content.decode()
    assert ranks.splitlines()[1:] == ['"A",2,1,1,2,1', '"B",2,2,2,1,3', '"C",1,2,2,3,1']
    table_13 = client.get(reverse("exports_table_csv", args=[summarized.slug, "faithfulness-abstractiveness"]))
    assert table_13.content.decode().splitlines()[2:4] == ['"B",-1.0,"*",0.0,4', '"C","","","",4']
    card = dataset_card(summarized, project_analytics(summarized), agreement_report(summarized, n_boot=10), 12)
    section = card.split("## The paper's result tables", 1)[1]
    assert "| Summarizer | Faithfulness | Completeness | Conciseness | Domain stability | Abstractiveness |" in section
    assert "| C | 1 | 2 | 2 | 3 | 1 |" in section
    assert "| B | -1.00 | * | 0.0000 | 4 |" in section and "| C | — |  | — | 4 |" in section
    assert "which the labels do not say" in section
    assert section.index("Figure 3:") < section.index("Table 4:") < section.index("Table 13:") < section.index(
        "Table 14:")
