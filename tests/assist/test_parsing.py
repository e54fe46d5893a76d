import json

import pytest

from assist.parsing import (
    CATEGORIES,
    ENTITY,
    NO_ERROR,
    OUT_OF_ARTICLE,
    RELATION,
    SENTENCE,
    ParseError,
    extract_json,
    normalise_category,
    parse_fact_check,
    parse_keyfacts,
    parse_paraphrase,
    parse_votes,
    strip_code_fences,
)


def judgements(*categories, reason="Because."):
    return json.dumps([{"sentence": i, "category": c, "reason": reason} for i, c in enumerate(categories, start=1)])


def test_the_slugs_are_the_ones_the_models_use():
    assert CATEGORIES == ("no_error", "out_of_article", "entity", "relation", "sentence")


@pytest.mark.parametrize(
    "spelling, slug",
    [
        ("no error", NO_ERROR),
        ("No Error", NO_ERROR),
        ("NO_ERROR", NO_ERROR),
        ("no-error", NO_ERROR),
        ("none", NO_ERROR),
        ("out-of-article error", OUT_OF_ARTICLE),
        ("Out-of-Article Error", OUT_OF_ARTICLE),
        ("out_of_article", OUT_OF_ARTICLE),
        ("OUT OF ARTICLE ERROR.", OUT_OF_ARTICLE),
        ("entity error", ENTITY),
        ("Entity", ENTITY),
        ("entity_error", ENTITY),
        ("relation-error", RELATION),
        ("Relation Errors", RELATION),
        ("sentence error", SENTENCE),
        ("SENTENCE", SENTENCE),
    ],
)
def test_category_spellings_are_mapped(spelling, slug):
    assert normalise_category(spelling) == slug


@pytest.mark.parametrize("spelling", ["hallucination", "error", "minor error", "", None, 3])
def test_unknown_categories_are_refused(spelling):
    with pytest.raises(ParseError, match="category"):
        normalise_category(spelling)


def test_a_clean_answer_is_parsed_in_sentence_order():
    answer = json.dumps([
        {"sentence": 2, "category": "entity error", "reason": "Wrong name."},
        {"sentence": 1, "category": "no error", "reason": "  Matches   S1. "},
    ])

    result = parse_fact_check(answer, 2)

    assert [(j.index, j.category, j.reason) for j in result] == [
        (0, NO_ERROR, "Matches S1."),
        (1, ENTITY, "Wrong name."),
    ]


def test_code_fences_and_prose_are_stripped():
    answer = "Here you go:\n```json\n" + judgements("no error") + "\n```\nHope this helps!"
    assert parse_fact_check(answer, 1)[0].category == NO_ERROR
    assert strip_code_fences("```\n[1]\n```") == "[1]"


def test_json_inside_prose_without_fences_is_found():
    answer = "My verdicts follow. " + judgements("no error", "sentence error") + " That is all."
    assert [j.category for j in parse_fact_check(answer, 2)] == [NO_ERROR, SENTENCE]


def test_a_wrapping_object_is_accepted():
    answer = json.dumps({"judgements": json.loads(judgements("relation error"))})
    assert parse_fact_check(answer, 1)[0].category == RELATION


def test_sentence_numbers_may_be_strings():
    answer = json.dumps([{"sentence": "Sentence 1", "category": "no error", "reason": "Fine."}])
    assert parse_fact_check(answer, 1)[0].index == 0


@pytest.mark.parametrize(
    "answer, n, message",
    [
        (judgements("no error"), 2, "Expected 2 judgements, one per numbered item, got 1"),
        (judgements("no error", "no error", "no error"), 2, "Expected 2 judgements"),
        (json.dumps([{"category": "no error", "reason": "x"}]), 1, "Item 1: missing the number"),
        (json.dumps([{"sentence": 5, "category": "no error", "reason": "x"}]), 1, "number 5 is outside 1..1"),
        (json.dumps([{"sentence": "the cat sat", "category": "no error", "reason": "x"}]), 1, "must be a number"),
        (judgements("no error", "no error").replace('"sentence": 2', '"sentence": 1'), 2, "judged twice"),
        (judgements("maybe"), 1, "Sentence 1: Unknown category 'maybe'"),
        (judgements("no error", reason="  "), 1, "Sentence 1: empty reason"),
        (json.dumps([{"sentence": 1, "category": "no error"}]), 1, "Sentence 1: empty reason"),
        (json.dumps(["no error"]), 1, "Item 1: expected an object"),
        ('[{"sentence": 1, "category": "no error", "reason": "x"', 1, "malformed"),
        ("I think the summary is fine.", 1, "contains no JSON"),
        ("", 1, "empty"),
    ],
)
def test_unusable_answers_raise_a_precise_parse_error(answer, n, message):
    with pytest.raises(ParseError) as raised:
        parse_fact_check(answer, n)
    assert message in raised.value.reason


def test_extract_json_prefers_the_fenced_block():
    assert extract_json('Example: [0]\n```json\n{"a": [1, 2]}\n```') == {"a": [1, 2]}


def test_key_facts_are_cleaned():
    facts = ["1. The museum reopened in May.", " - The mayor opposed the plan. ", "", '"x"']
    answer = json.dumps({"key_facts": facts})
    assert parse_keyfacts(answer) == ["The museum reopened in May.", "The mayor opposed the plan.", "x"]


def test_key_facts_must_be_strings():
    with pytest.raises(ParseError, match="Key-fact 1: expected a string"):
        parse_keyfacts("[1, 2]")
    with pytest.raises(ParseError, match="no key-facts"):
        parse_keyfacts('["  "]')


def test_votes_are_parsed():
    answer = json.dumps([
        {"candidate": 2, "response": "No.", "reason": "Not in the text."},
        {"candidate": "1", "response": "Yes", "reason": "Central point."},
    ])
    assert parse_votes(answer, 2) == [(True, "Central point."), (False, "Not in the text.")]


def test_votes_need_yes_or_no():
    answer = json.dumps([{"candidate": 1, "response": "perhaps", "reason": "Unsure."}])
    with pytest.raises(ParseError, match="Candidate 1: the response must be yes or no"):
        parse_votes(answer, 1)


def test_paraphrases_come_as_json_or_plain_text():
    sentence = "The plan was opposed by the mayor."
    assert parse_paraphrase(json.dumps({"paraphrase": sentence})) == sentence
    assert parse_paraphrase(f'"{sentence}"') == sentence
    with pytest.raises(ParseError):
        parse_paraphrase('{"paraphrase": ""}')
