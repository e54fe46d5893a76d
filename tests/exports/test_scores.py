"""Summary scores, checked by hand and against the published tables.

Sources: FineSurE (Song et al. 2024), figure 1: 1 of 3 sentences correct -> faithfulness 33%, 3 of 4
key-facts aligned -> completeness 75%, 2 of 3 sentences aligned -> conciseness 66%. UniSumEval (Lee et
al. 2024), appendix F.2, tables 14-17 (per-domain scores, "Avg. Score" and "DoS" columns) and table 12
(human corrections of the AI's labels).
"""

import math

import pytest

from exports.scores import (
    TIE_BREAK,
    abstractiveness,
    ai_correction_rates,
    completeness,
    composite,
    conciseness,
    context_table,
    domain_stability,
    error_type_distribution,
    faithfulness,
    hallucinated_sources,
    key_fact_alignment_scores,
    majority_vote,
    novel_ngram_ratio,
    score_table,
    summary_has_error,
    tokenize,
)

DOMAINS = ["News", "Lifestyle", "Report", "Med lit", "Sci-fi", "Daily life", "Booking", "Interview", "Meeting"]

# UniSumEval tables 14 (faithfulness), 15 (completeness), 16 (conciseness), 17 (composite), in percent.
BART = {
    "faithfulness": [91.5, 83.7, 91.0, 91.9, 85.7, 80.3, 82.8, 81.1, 74.7],
    "completeness": [49.8, 86.0, 17.0, 23.8, 8.0, 40.1, 55.4, 30.8, 31.0],
    "conciseness": [90.9, 82.3, 73.3, 81.3, 25.8, 75.7, 83.4, 68.5, 75.9],
    "composite": [77.4, 84.0, 60.5, 65.6, 39.8, 65.4, 73.9, 60.1, 60.5],
}
PHI2_FAITHFULNESS = [81.8, 62.8, 100.0, 75.8, 77.6, 83.6, 90.0, 81.1, 81.3]
FLAN_T5_FAITHFULNESS = [84.7, 96.0, 85.3, 90.0, 74.7, 66.0, 78.6, 89.5, 61.4]

# Table cells are rounded to 0.1, so anything derived from them is good to about 0.1.
TABLE_TOLERANCE = 0.1


def test_majority_vote_with_a_clear_majority():
    assert majority_vote([True, True, False], on_tie=False) is True
    assert majority_vote([False, True, False], on_tie=True) is False
    assert majority_vote([True, None, True], on_tie=False) is True
    assert majority_vote([1, 0, 1], on_tie=False) is True


def test_majority_vote_ties_follow_the_task_rule():
    split = [True, False, None]
    assert majority_vote(split, on_tie=TIE_BREAK["fv"]) is True  # An error on a split vote.
    assert majority_vote(split, on_tie=TIE_BREAK["kv"]) is False  # Not a human key-fact.
    assert majority_vote(split, on_tie=TIE_BREAK["ka"]) is False  # Not aligned.
    assert majority_vote(split, on_tie=None) is None
    assert majority_vote([None, None, None], on_tie=True) is None
    assert majority_vote([], on_tie=True) is None


def test_finesure_figure_1_scores():
    assert faithfulness([False, True, True]) == pytest.approx(1 / 3)
    assert completeness([True, True, True, False]) == 0.75
    assert conciseness([True, True, False]) == pytest.approx(2 / 3)


def test_key_fact_alignment_scores_of_figure_1():
    # 4 key-facts x 3 sentences: k1 and k2 in sentence 1, k3 in sentence 2, k4 nowhere.
    matrix = [
        [True, False, False],
        [True, False, False],
        [False, True, False],
        [False, False, False],
    ]
    scores = key_fact_alignment_scores(matrix)
    assert scores.keyfact_label == [1, 1, 1, 0]
    assert scores.sentence_label == [1, 1, 0]
    assert scores.completeness == 0.75
    assert scores.conciseness == pytest.approx(2 / 3)


def test_key_fact_alignment_without_key_facts_is_undefined():
    scores = key_fact_alignment_scores([], n_sentences=3)
    assert scores.completeness is None and scores.conciseness is None
    assert scores.keyfact_label == [] and scores.sentence_label == [0, 0, 0]
    with pytest.raises(ValueError):
        key_fact_alignment_scores([[True, False], [True]])
    with pytest.raises(ValueError):
        key_fact_alignment_scores([[True, False]], n_sentences=3)


def test_scores_are_undefined_without_items_or_labels():
    assert faithfulness([]) is None
    assert completeness([]) is None
    assert conciseness([]) is None
    assert faithfulness([False, None]) is None
    assert faithfulness([False, False]) == 1.0
    assert faithfulness([True]) == 0.0


def test_composite_is_the_mean_of_the_three_scores_or_nothing():
    assert composite(0.5, 1.0, 0.0) == 0.5
    # A document without human key-facts: no completeness or conciseness, so no composite (not faithfulness alone).
    assert composite(0.9, None, None) is None
    assert composite(0.9, 0.5, None) is None
    assert composite(None, 1.0, 1.0) is None
    assert composite(None, None, None) is None
    # Table 17, BART News and Lifestyle: (91.5 + 49.8 + 90.9) / 3 = 77.4, (83.7 + 86.0 + 82.3) / 3 = 84.0.
    assert composite(91.5, 49.8, 90.9) == pytest.approx(77.4, abs=0.05)
    assert composite(83.7, 86.0, 82.3) == pytest.approx(84.0, abs=0.05)


@pytest.mark.parametrize(
    ("means", "published"),
    [
        (BART["faithfulness"], 82.8),  # Table 14, 100 - (91.9 - 74.7).
        (FLAN_T5_FAITHFULNESS, 65.4),  # Table 14, 100 - (96.0 - 61.4).
        (PHI2_FAITHFULNESS, 62.8),  # Table 14, 100 - (100.0 - 62.8).
        (BART["completeness"], 22.0),  # Table 15, 100 - (86.0 - 8.0).
        (BART["conciseness"], 34.9),  # Table 16, 100 - (90.9 - 25.8).
        (BART["composite"], 55.8),  # Table 17, 100 - (84.0 - 39.8).
    ],
)
def test_domain_stability_matches_the_published_tables(means, published):
    assert domain_stability(means) == pytest.approx(published, abs=1e-9)
    assert domain_stability(dict(zip(DOMAINS, means))) == pytest.approx(published, abs=1e-9)


def test_domain_stability_edge_cases():
    assert domain_stability([70.0]) == 100.0
    assert domain_stability([80.0, None, float("nan"), 60.0]) == 80.0
    with pytest.raises(ValueError):
        domain_stability([None])


def summary_rows(model: str, tables: dict[str, list[float]]) -> list[dict]:
    """One summary per domain whose scores are the table's cell values (as fractions)."""
    return [
        {"model": model, "domain": domain, **{dim: tables[dim][i] / 100 for dim in tables}}
        for i, domain in enumerate(DOMAINS)
    ]


def test_score_table_reproduces_tables_14_to_17_for_bart():
    rows = summary_rows("BART", {dim: BART[dim] for dim in ("faithfulness", "completeness", "conciseness")})
    rows += summary_rows("Phi-2", {"faithfulness": PHI2_FAITHFULNESS, "completeness": [50] * 9,
                                   "conciseness": [50] * 9})  # fmt: skip
    table = score_table(rows)
    for column, domain in enumerate(DOMAINS):
        assert table.by_domain["faithfulness"].loc["BART", domain] == pytest.approx(BART["faithfulness"][column])
        assert table.by_domain["composite"].loc["BART", domain] == pytest.approx(
            BART["composite"][column], abs=TABLE_TOLERANCE
        )
    # "Avg. Score" columns of tables 14-17 for BART: 84.7, 38.0, 73.0, 65.2; Phi-2 faithfulness 81.5.
    assert table.overall.loc["BART", "faithfulness"] == pytest.approx(84.7, abs=TABLE_TOLERANCE)
    assert table.overall.loc["BART", "completeness"] == pytest.approx(38.0, abs=TABLE_TOLERANCE)
    assert table.overall.loc["BART", "conciseness"] == pytest.approx(73.0, abs=TABLE_TOLERANCE)
    assert table.overall.loc["BART", "composite"] == pytest.approx(65.2, abs=TABLE_TOLERANCE)
    assert table.overall.loc["Phi-2", "faithfulness"] == pytest.approx(81.5, abs=TABLE_TOLERANCE)
    # "DoS" columns: 82.8, 22.0, 34.9, 55.8; Phi-2 faithfulness 62.8.
    assert table.domain_stability.loc["BART", "faithfulness"] == pytest.approx(82.8)
    assert table.domain_stability.loc["BART", "completeness"] == pytest.approx(22.0)
    assert table.domain_stability.loc["BART", "conciseness"] == pytest.approx(34.9)
    assert table.domain_stability.loc["BART", "composite"] == pytest.approx(55.8, abs=TABLE_TOLERANCE)
    assert table.domain_stability.loc["Phi-2", "faithfulness"] == pytest.approx(62.8)


def test_score_table_averages_summaries_and_skips_undefined_scores():
    rows = [
        {"model": "m", "domain": "news", "faithfulness": 1.0, "completeness": 0.5, "conciseness": 1.0},
        {"model": "m", "domain": "news", "faithfulness": 0.5, "completeness": None, "conciseness": None},
        {"model": "m", "domain": "meeting", "faithfulness": 0.0, "completeness": 0.0, "conciseness": 0.0},
    ]
    table = score_table(rows)
    # news: faithfulness (100 + 50) / 2 = 75, completeness 50 (one defined), conciseness 100,
    # composite (75 + 50 + 100) / 3 = 75; meeting: all 0. Overall: mean of the two domains.
    assert table.by_domain["faithfulness"].loc["m", "news"] == 75.0
    assert table.by_domain["completeness"].loc["m", "news"] == 50.0
    assert table.by_domain["composite"].loc["m", "news"] == 75.0
    assert table.overall.loc["m", "faithfulness"] == 37.5
    assert table.domain_stability.loc["m", "composite"] == 25.0
    with pytest.raises(ValueError):
        score_table([])


def test_a_cell_without_key_facts_has_no_composite():
    rows = [
        {"model": "m", "domain": "news", "faithfulness": 0.8, "completeness": 0.5, "conciseness": 1.0},
        # booking: no document has human key-facts, so neither completeness nor conciseness exists.
        {"model": "m", "domain": "booking", "faithfulness": 0.6, "completeness": None, "conciseness": None},
    ]
    table = score_table(rows)
    assert table.by_domain["faithfulness"].loc["m", "booking"] == pytest.approx(60.0)
    assert math.isnan(table.by_domain["composite"].loc["m", "booking"])
    assert table.by_domain["composite"].loc["m", "news"] == pytest.approx((80 + 50 + 100) / 3)
    # The overall composite and its domain stability come from the domains that have one.
    assert table.overall.loc["m", "composite"] == pytest.approx((80 + 50 + 100) / 3)
    assert table.domain_stability.loc["m", "composite"] == 100.0


def test_tokenize():
    assert tokenize("The U.S. can't <PLACE_1>, OK?") == ["the", "u", "s", "can", "t", "place_1", "ok"]


def test_abstractiveness_by_hand():
    source = "The cat sat on the mat."
    summary = "The cat sat on a mat."
    # Unigrams {the, cat, sat, on, a, mat}: 5 copied -> N1 = 1/6. Trigrams: "the cat sat", "cat sat on"
    # copied, "sat on a", "on a mat" novel -> N3 = 1/2. 5-grams: both novel -> N5 = 1. Mean = 5/9.
    assert novel_ngram_ratio(tokenize(summary), tokenize(source), 1) == pytest.approx(1 / 6)
    assert novel_ngram_ratio(tokenize(summary), tokenize(source), 3) == pytest.approx(1 / 2)
    assert novel_ngram_ratio(tokenize(summary), tokenize(source), 5) == 1.0
    assert abstractiveness(summary, source) == pytest.approx(5 / 9)
    assert abstractiveness("THE CAT, sat on the mat!", source) == 0.0  # A verbatim copy.


def test_abstractiveness_of_short_and_empty_summaries():
    # Two tokens: only unigrams exist, both copied.
    assert abstractiveness("Cats sleep.", "Cats sleep a lot.") == 0.0
    # "dogs bark loudly": unigrams 2/3 novel, the one trigram novel, no 5-gram -> (2/3 + 1) / 2.
    assert abstractiveness("dogs bark loudly", "the dogs sleep") == pytest.approx(5 / 6)
    assert abstractiveness("", "anything") is None
    assert abstractiveness("...", "anything") is None


def test_error_type_distribution():
    rows = [
        {"model": "a", "error_types": ["entity"]},
        {"model": "a", "error_types": ["entity", "relation"]},
        {"model": "a", "error_types": ["out_of_article"]},
        {"model": "b", "error_types": ["sentence"]},
        {"model": "c", "error_types": []},
    ]
    distribution = error_type_distribution(rows)
    assert distribution["a"] == {"entity": 0.5, "out_of_article": 0.25, "relation": 0.25, "sentence": 0.0}
    assert distribution["b"] == {"entity": 0.0, "out_of_article": 0.0, "relation": 0.0, "sentence": 1.0}
    assert distribution["c"] == {}
    by_type = error_type_distribution([{"kind": "llm", "error_types": ["entity"]}], group_by="kind")
    assert by_type == {"llm": {"entity": 1.0}}


def correction_pairs(ai_error: int, ai_error_corrected: int, ai_clean: int, ai_clean_corrected: int):
    return (
        [(True, False)] * ai_error_corrected
        + [(True, True)] * (ai_error - ai_error_corrected)
        + [(False, True)] * ai_clean_corrected
        + [(False, False)] * (ai_clean - ai_clean_corrected)
    )


@pytest.mark.parametrize(
    ("counts", "error_rate", "clean_rate"),
    [
        ((942, 168, 3_459, 62), 17.83, 1.79),  # Non LLM.
        ((870, 174, 10_803, 287), 20.00, 2.66),  # Open-source LLM.
        ((249, 56, 8_076, 229), 22.49, 2.84),  # Proprietary LLM.
    ],
)
def test_ai_correction_rates_table_12(counts, error_rate, clean_rate):
    rates = ai_correction_rates(correction_pairs(*counts))
    assert round(rates.ai_error_correction_rate * 100, 2) == error_rate
    assert round(rates.ai_no_error_correction_rate * 100, 2) == clean_rate


def test_ai_correction_rates_table_12_total_and_section_4_1():
    # Table 12 total: 19.31% (398/2,061) and 2.59% (578/22,338), quoted in section 4.1.
    pairs = correction_pairs(942, 168, 3_459, 62) + correction_pairs(870, 174, 10_803, 287)
    pairs += correction_pairs(249, 56, 8_076, 229) + [(None, True), (True, None)]
    rates = ai_correction_rates(pairs)
    assert (rates.ai_error, rates.ai_error_corrected) == (2_061, 398)
    assert (rates.ai_no_error, rates.ai_no_error_corrected) == (22_338, 578)
    assert round(rates.ai_error_correction_rate * 100, 2) == 19.31
    assert round(rates.ai_no_error_correction_rate * 100, 2) == 2.59


def test_ai_correction_rates_without_pairs():
    rates = ai_correction_rates([])
    assert rates.ai_error_correction_rate is None and rates.ai_no_error_correction_rate is None
    assert not math.isnan(ai_correction_rates([(True, True)]).ai_error_correction_rate)


# Table 4's contexts, from the dataset list of table 9: which domains are short or long, dialogue or not.
CONTEXT_OF = {"News": ("non-dialogue", "short"), "Lifestyle": ("non-dialogue", "short"),
              "Report": ("non-dialogue", "long"), "Med lit": ("non-dialogue", "long"), "Sci-fi": ("non-dialogue", "long"),
              "Daily life": ("dialogue", "short"), "Booking": ("dialogue", "short"),
              "Interview": ("dialogue", "long"), "Meeting": ("dialogue", "long")}


def test_context_table_reproduces_table_4_for_bart_from_tables_14_to_16():
    rows = [{**row, "input_type": CONTEXT_OF[row["domain"]][0], "length": CONTEXT_OF[row["domain"]][1]}
            for row in summary_rows("BART", {dim: BART[dim] for dim in ("faithfulness", "completeness",
                                                                        "conciseness")})]
    table = context_table(rows)
    # Table 4, BART: Faith/Comp/Conc per context, then the model-wise averages 84.1, 40.7, 74.6.
    published = {("non-dialogue", "short"): (87.6, 67.9, 86.6), ("non-dialogue", "long"): (89.5, 16.3, 60.1),
                 ("dialogue", "short"): (81.5, 47.8, 79.6), ("dialogue", "long"): (77.9, 30.9, 72.2)}
    for (kind, length), values in published.items():
        for dimension, value in zip(("faithfulness", "completeness", "conciseness"), values):
            assert table.cells.loc["BART", (kind, length, dimension)] == pytest.approx(value, abs=0.051)
    assert table.model_average.loc["BART"].tolist() == pytest.approx([84.1, 40.7, 74.6], abs=0.051)


def test_context_table_by_hand():
    rows = [
        {"model": "A", "input_type": "non-dialogue", "length": "short", "faithfulness": 1.0, "completeness": 0.5,
         "conciseness": 1.0},
        {"model": "A", "input_type": "non-dialogue", "length": "short", "faithfulness": 0.5, "completeness": None,
         "conciseness": 1.0},
        {"model": "A", "input_type": "non-dialogue", "length": "long", "faithfulness": 0.0, "completeness": 0.25,
         "conciseness": 0.5},
        {"model": "A", "input_type": "dialogue", "length": "short", "faithfulness": 1.0, "completeness": 1.0,
         "conciseness": 1.0},
        {"model": "B", "input_type": "non-dialogue", "length": "short", "faithfulness": 0.5, "completeness": 0.5,
         "conciseness": 0.5},
        {"model": "B", "input_type": "dialogue", "length": "short", "faithfulness": 0.0, "completeness": 0.0,
         "conciseness": 0.0},
    ]
    table = context_table(rows)
    # A, non-dialogue short: faithfulness (100 + 50) / 2, completeness 50 (the one defined), conciseness 100.
    assert table.cells.loc["A", ("non-dialogue", "short", "faithfulness")] == 75.0
    assert table.cells.loc["A", ("non-dialogue", "short", "completeness")] == 50.0
    # B has no long text: its cell is empty and its average runs over its two contexts.
    assert math.isnan(table.cells.loc["B", ("non-dialogue", "long", "faithfulness")])
    assert table.model_average.loc["A", "faithfulness"] == pytest.approx((75 + 0 + 100) / 3)
    assert table.model_average.loc["B", "faithfulness"] == 25.0
    assert table.context_average[("non-dialogue", "short", "faithfulness")] == 62.5
    assert table.context_average[("dialogue", "short", "conciseness")] == 50.0
    assert table.overall["faithfulness"] == pytest.approx(((75 + 0 + 100) / 3 + 25) / 2)
    with pytest.raises(ValueError):
        context_table([])


def test_the_domain_average_is_the_mean_over_summarizers():
    rows = [{"model": "A", "domain": "news", "faithfulness": 1.0, "completeness": 0.5, "conciseness": 0.5},
            {"model": "B", "domain": "news", "faithfulness": 0.5, "completeness": 0.0, "conciseness": 1.0},
            {"model": "A", "domain": "meeting", "faithfulness": 0.2, "completeness": 0.4, "conciseness": 0.6}]
    table = score_table(rows)
    assert table.domain_average("faithfulness").to_dict() == pytest.approx({"news": 75.0, "meeting": 20.0})
    # Composite: news A (100 + 50 + 50) / 3, B (50 + 0 + 100) / 3; their mean is 58.33.
    assert table.domain_average("composite")["news"] == pytest.approx(175 / 3)
    # Table 14's "Avg. Score in Domain" for News from its nine summarizers.
    news = [91.5, 84.7, 81.8, 94.7, 92.7, 97.4, 95.0, 97.3, 99.3]
    published = score_table([{"model": str(i), "domain": "News", "faithfulness": v / 100, "completeness": 0.5,
                              "conciseness": 0.5} for i, v in enumerate(news)])
    assert published.domain_average("faithfulness")["News"] == pytest.approx(92.7, abs=0.05)


def test_a_summary_has_an_error_once_one_sentence_has_one():
    assert summary_has_error([False, True]) is True
    assert summary_has_error([None, True]) is True
    assert summary_has_error([False, False]) is False
    assert summary_has_error([False, None]) is None
    assert summary_has_error([]) is None


def test_hallucinated_sources_count_a_text_once_any_summary_errs():
    share = hallucinated_sources({"t1": [True, False], "t2": [False, False], "t3": [None, True], "t4": [False, None],
                                  "t5": []})
    # t1 and t3 hallucinated; t2 decided without one; t4 and t5 not decided yet.
    assert (share.hallucinated, share.decided, share.undecided) == (2, 3, 2)
    assert share.share == pytest.approx(2 / 3)
    assert hallucinated_sources({}).share is None
