"""The paper's result tables on the analytics page, its CSVs and the dataset card, against numbers worked by hand.

The fixture: five source texts, two summarizers, the majority labels and scores given as a release gives them (no
annotator labels, so what each summary scores is written here, not voted). Per text: source, domain, type, the
length stored on the document, words; per summary: the sentences' error labels (1 = error) with their error types,
completeness, conciseness.

    n1  CNN  news        non-dialogue  short   400   A [0, 0] 1.0 .5 1.0     B [0] .2 0
    n2  CNN  news        non-dialogue  long   1200   A [1 entity, 0] .5 1 .5   B [0, 0] .5 1
    r1  Gov  report      non-dialogue  long   5000   A [0, 0, 0, 0] .25 .75  B [1 relation, 0] .5 .5
    d1  DS   daily life  dialogue      short   150   A [0] 1 1               B [undecided] .5 1
    m1  MB   meeting     dialogue      short  1000   A [1 out_of_article, 1 entity, 0] .5 .5   B [0, 0, 0, 0] .75 .5

Short or long goes by each source's average words (the paper's rule, threshold 900): CNN averages 800 and is short,
n2 included; MB averages 1000 and is long, m1 included, whatever the documents say.
"""

import pytest
from django.urls import reverse

from corpus.models import Document, Summary
from exports.analytics import project_analytics
from exports.card import dataset_card
from exports.figures import figures_compute, table_from
from exports.models import ReleaseLabels
from exports.report import agreement_report

pytestmark = pytest.mark.usefixtures("numbers_worker")

TEXTS = [("n1", "CNN", "news", "non-dialogue", "short", 400), ("n2", "CNN", "news", "non-dialogue", "long", 1200),
         ("r1", "Gov", "report", "non-dialogue", "long", 5000), ("d1", "DS", "daily life", "dialogue", "short", 150),
         ("m1", "MB", "meeting", "dialogue", "short", 1000)]
# (fv labels, error types, completeness, conciseness) per text and summarizer.
LABELS = {
    "A": {"n1": ([0, 0], [[], []], 0.5, 1.0), "n2": ([1, 0], [["entity"], []], 1.0, 0.5),
          "r1": ([0, 0, 0, 0], [[]] * 4, 0.25, 0.75), "d1": ([0], [[]], 1.0, 1.0),
          "m1": ([1, 1, 0], [["out_of_article"], ["entity"], []], 0.5, 0.5)},
    "B": {"n1": ([0], [[]], 0.2, 0.0), "n2": ([0, 0], [[], []], 0.5, 1.0), "r1": ([1, 0], [["relation"], []], 0.5, 0.5),
          "d1": ([None], [[]], 0.5, 1.0), "m1": ([0, 0, 0, 0], [[]] * 4, 0.75, 0.5)},
}


def release(project, texts, labels):
    """`texts`: (uid, source, domain, type, stored length, words, redact_type); `labels[model][uid]`: (fv labels,
    error types, completeness, conciseness)."""
    for uid, source, domain, kind, length, words, redact_type in texts:
        document = Document.objects.create(project=project, uid=uid, doc_id=uid, source=source, domain=domain,
                                           input_type=kind, length=length, text="A text.", word_count=words,
                                           text_sha256=uid, redact_type=redact_type)
        for model, by_text in labels.items():
            fv, types, complete, concise = by_text[uid]
            summary = Summary.objects.create(document=document, model=model, text="s", text_sha256=uid + model)
            decided = [label for label in fv if label is not None]
            ReleaseLabels.objects.create(
                project=project, summary=summary, release="test", fact_verification_label=fv,
                fact_verification_error_type=types,
                faithfulness_score=None if len(decided) < len(fv) else 1 - sum(decided) / len(fv),
                completeness=complete, conciseness=concise)
    return project


@pytest.fixture
def released(project):
    return release(project, [(*text, "") for text in TEXTS], LABELS)


def csv(client, project, name, **query) -> str:
    response = client.get(reverse("exports_table_csv", args=[project.slug, name]), query)
    assert response.status_code == 200, response.content
    return response.content.decode()


def rows_of(figures: dict, name: str, dimension: str = "composite") -> list[list]:
    return [list(row.values()) for row in table_from(figures, name, dimension=dimension)]


def test_table_4_groups_by_each_source_average_length(released):
    figures = figures_compute(released, include_simulated=False)
    rows = rows_of(figures, "context-scores")
    header = list(table_from(figures, "context-scores")[0])
    assert header == ["Summarizer", *[f"{kind} {length} {dim}" for kind in ("Non-dialogue", "Dialogue")
                                      for length in ("Short", "Long") for dim in ("Faith", "Comp", "Conc")],
                      "Avg. score model-wise Faith", "Avg. score model-wise Comp", "Avg. score model-wise Conc"]
    # A: non-dialogue short is n1 and n2 (faith (100 + 50) / 2, comp (50 + 100) / 2, conc (100 + 50) / 2); long r1;
    # dialogue short d1; long m1 (faith 1/3). Model-wise: (75 + 100 + 100 + 33.3) / 4 = 77.1, (75 + 25 + 100 + 50)
    # / 4, (75 + 75 + 100 + 50) / 4.
    assert rows[0] == ["A", 75.0, 75.0, 75.0, 100.0, 25.0, 75.0, 100.0, 100.0, 100.0, 33.3, 50.0, 50.0,
                       77.1, 62.5, 75.0]
    # B: d1 has no faithfulness yet, so B's model-wise faithfulness is over three contexts: (100 + 50 + 100) / 3.
    assert rows[1] == ["B", 100.0, 35.0, 50.0, 50.0, 50.0, 50.0, None, 50.0, 100.0, 100.0, 75.0, 50.0,
                       83.3, 52.5, 62.5]
    # Context-wise: the mean of A and B per column (dialogue short faithfulness: A's alone); the corner the mean of
    # the model-wise averages: (77.08 + 83.33) / 2, (62.5 + 52.5) / 2, (75 + 62.5) / 2.
    assert rows[2] == ["Avg. score (context-wise)", 87.5, 55.0, 62.5, 75.0, 37.5, 62.5, 100.0, 75.0, 100.0,
                       66.7, 62.5, 50.0, 80.2, 57.5, 68.8]


@pytest.mark.parametrize("dimension, expected", [
    # News, report (non-dialogue), daily life, meeting (dialogue), Avg. score, DoS.
    ("faithfulness", [["A", 75.0, 100.0, 100.0, 33.3, 77.1, 33.3], ["B", 100.0, 50.0, None, 100.0, 83.3, 50.0],
                      ["Avg. score in domain", 87.5, 75.0, 100.0, 66.7, None, None]]),
    ("completeness", [["A", 75.0, 25.0, 100.0, 50.0, 62.5, 25.0], ["B", 35.0, 50.0, 50.0, 75.0, 52.5, 60.0],
                      ["Avg. score in domain", 55.0, 37.5, 75.0, 62.5, None, None]]),
    ("conciseness", [["A", 75.0, 75.0, 100.0, 50.0, 75.0, 50.0], ["B", 50.0, 50.0, 100.0, 50.0, 62.5, 50.0],
                     ["Avg. score in domain", 62.5, 62.5, 100.0, 50.0, None, None]]),
    # A news (75 + 75 + 75) / 3, report (100 + 25 + 75) / 3, meeting (33.3 + 50 + 50) / 3; B news
    # (100 + 35 + 50) / 3, no composite in daily life (no faithfulness), meeting (100 + 75 + 50) / 3.
    ("composite", [["A", 75.0, 66.7, 100.0, 44.4, 71.5, 44.4], ["B", 61.7, 50.0, None, 75.0, 62.2, 75.0],
                   ["Avg. score in domain", 68.3, 58.3, 100.0, 59.7, None, None]]),
])
def test_tables_14_to_17_give_each_dimension_with_averages_and_domain_stability(released, dimension, expected):
    figures = figures_compute(released, include_simulated=False)
    assert list(table_from(figures, "domain-table", dimension)[0]) == [
        "Summarizer", "Non-dialogue news", "Non-dialogue report", "Dialogue daily life", "Dialogue meeting",
        "Avg. score", "DoS"]
    assert rows_of(figures, "domain-table", dimension) == expected


def test_table_5_compares_redacted_texts_with_the_others_of_their_domain(project):
    # Booking: b1 and b2 as they were, b3 redacted; the news text n1 is not compared. Faithfulness per summary:
    # A b1 1, b2 1/2, b3 1/4 (n1 0); B b1 1, b2 1, b3 2/3 (n1 1).
    texts = [("b1", "WOZ", "booking", "dialogue", "short", 200, "unredact"),
             ("b2", "WOZ", "booking", "dialogue", "short", 300, "unredact"),
             ("b3", "WOZ", "booking", "dialogue", "short", 250, "redact"),
             ("n1", "CNN", "news", "non-dialogue", "short", 500, "")]
    full = (1.0, 1.0)  # completeness and conciseness: not what table 5 compares
    labels = {"A": {"b1": ([0, 0], [[], []], *full), "b2": ([1, 0], [[], []], *full),
                    "b3": ([1, 1, 1, 0], [[]] * 4, *full), "n1": ([1], [[]], *full)},
              "B": {"b1": ([0], [[]], *full), "b2": ([0, 0, 0], [[]] * 3, *full),
                    "b3": ([0, 0, 1], [[]] * 3, *full), "n1": ([0], [[]], *full)}}
    release(project, texts, labels)
    figures = figures_compute(project, include_simulated=False)
    assert list(table_from(figures, "redaction")[0]) == ["Summarizer", "Unredaction", "Redaction", "Change"]
    # A: (100 + 50) / 2 = 75 before, 25 after; B: 100 before, 66.7 after, 66.67 - 100 = -33.3.
    assert rows_of(figures, "redaction") == [["A", 75.0, 25.0, -50.0], ["B", 100.0, 66.7, -33.3]]
    redaction = next(table for table in figures["page"]["paper_tables"] if table["csv"] == "redaction")
    assert "Domains: booking; 4 summaries of unredacted texts, 2 of redacted ones." in redaction["note"]
    card = dataset_card(project, project_analytics(project), agreement_report(project, n_boot=10), 8)
    assert "| A | 75.0 | 25.0 | -50.0 |" in card and "Table 5: faithfulness (%)" in card


def test_no_redaction_table_without_a_redacted_text(released):
    assert table_from(figures_compute(released, include_simulated=False), "redaction") is None


def test_the_share_of_source_texts_with_a_hallucination(released):
    figures = figures_compute(released, include_simulated=False)
    # n1: neither summary errs; n2 (A), r1 (B) and m1 (A) have an error; d1: A is clean, B's sentence undecided.
    assert rows_of(figures, "hallucinated-sources") == [
        ["daily life", 1, 0, None, 1], ["meeting", 1, 1, 100.0, 0], ["news", 2, 1, 50.0, 0],
        ["report", 1, 1, 100.0, 0], ["All", 5, 3, 75.0, 1]]


def test_error_types_per_summarizer(released):
    figures = figures_compute(released, include_simulated=False)
    # A: entity twice (n2, m1), out-of-article once (m1), one type on each of its three erroneous sentences; B:
    # relation once. Named and ordered as the paper's figure 4 (no sentence error was given, so no column for it).
    assert list(table_from(figures, "error-types-by-summarizer")[0]) == [
        "Summarizer", "Erroneous sentences", "OutE", "EntE", "RelE"]
    assert rows_of(figures, "error-types-by-summarizer") == [["A", 3, 33.3, 66.7, 0.0], ["B", 1, 0.0, 0.0, 100.0]]


def test_the_page_and_its_csvs_give_the_tables_with_captions(client, released, manager, outsider):
    client.force_login(manager)
    page = client.get(reverse("exports_analytics", args=[released.slug])).content.decode()
    assert 'id="paper-tables"' in page
    for caption in ("Table 4: faithfulness (Faith)", "Table 14: faithfulness scores", "Table 15: completeness",
                    "Table 16: conciseness", "Table 17: composite", "at least one summarizer hallucinates",
                    "Factual error types (%) per summarizer"):
        assert caption in page
    assert '<th colspan="6" class="group-head">Short</th>' not in page  # a level spans only its own columns
    assert '<th colspan="3" class="group-head">Short</th>' in page
    assert "CNN short (800 words); DS short (150 words); Gov long (5,000 words); MB long (1,000 words)." in page

    text = csv(client, released, "domain-table", dimension="completeness")
    assert text.splitlines()[1] == '"A",75.0,25.0,100.0,50.0,62.5,25.0'
    assert csv(client, released, "hallucinated-sources").splitlines()[-1] == '"All",5,3,75.0,1'
    assert csv(client, released, "context-scores").splitlines()[0].startswith('"Summarizer","Non-dialogue Short Faith"')

    client.force_login(outsider)
    assert client.get(reverse("exports_table_csv", args=[released.slug, "context-scores"])).status_code == 404


def test_the_dataset_card_gives_the_tables_under_their_captions(released):
    analytics = project_analytics(released)
    card = dataset_card(released, analytics, agreement_report(released, n_boot=10), 10)
    section = card.split("## The paper's result tables", 1)[1]
    assert "| Summarizer | Non-dialogue Short Faith |" in section
    assert ("| A | 75.0 | 75.0 | 75.0 | 100.0 | 25.0 | 75.0 | 100.0 | 100.0 | 100.0 | 33.3 | 50.0 | 50.0 | 77.1 | "
            "62.5 | 75.0 |") in section
    assert "| Avg. score in domain | 55.0 | 37.5 | 75.0 | 62.5 | — | — |" in section
    assert "| All | 5 | 3 | 75.0 | 1 |" in section
    assert "| B | 1 | 0.0 | 0.0 | 100.0 |" in section
    for caption in ("Table 4:", "Table 14:", "Table 15:", "Table 16:", "Table 17:", "hallucinates", "error types"):
        assert caption in section
