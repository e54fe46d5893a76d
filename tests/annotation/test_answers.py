"""One item's answers are checked by clean_answers, plain Python: the same rules and words for the pages and the API,
and the same words as the request the API's schema documents."""

import ast
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.api.work import AnswerRequestSerializer
from annotation.models import ErrorType, Hit, Label, Unit
from annotation.services.answers import clean_answers
from corpus.models import Project

ROOT = Path(__file__).resolve().parents[2]
FV_QUESTIONS = {"has_error", "error_types", "ai_right", "seconds_on_item"}


def fv_unit() -> tuple[Unit, Hit]:
    """An FV unit whose HIT shows the AI judgment, so every FV question is asked (no database needed)."""
    hit = Hit(project=Project(slug="p", assistance="reason"), task="fv")
    return Unit(hit=hit, task="fv", position=0, ai_category="no_error"), hit


def check(data: dict, stored: Label | None = None) -> tuple[dict, list[str]]:
    unit, hit = fv_unit()
    return clean_answers(unit=unit, hit=hit, data=data, stored=stored)


@pytest.mark.parametrize("data, problems", [
    ({"has_error": "perhaps"}, ["has_error: Must be a valid boolean."]),
    ({"has_error": None}, ["has_error: This field may not be null."]),
    ({"has_error": [True]}, ["has_error: Must be a valid boolean."]),
    ({"has_error": 2}, ["has_error: Must be a valid boolean."]),
    ({"error_types": "entity"}, ['error_types: Expected a list of items but got type "str".']),
    ({"error_types": {"entity": 1}}, ['error_types: Expected a list of items but got type "dict".']),
    ({"error_types": 3}, ['error_types: Expected a list of items but got type "int".']),
    ({"error_types": ["entity", "typo", None]},
     ['error_types: "typo" is not a valid choice.', "error_types: This field may not be null."]),
    ({"error_types": ["entity"] * 5}, ["error_types: Ensure this field has no more than 4 elements."]),
    ({"seconds_on_item": "soon"}, ["seconds_on_item: A valid number is required."]),
    ({"seconds_on_item": "nan"}, ["seconds_on_item: A valid number is required."]),
    ({"seconds_on_item": float("inf")}, ["seconds_on_item: A valid number is required."]),
    ({"seconds_on_item": 10 ** 400}, ["seconds_on_item: Integer value too large to convert to float"]),
    ({"seconds_on_item": "1" * 1001}, ["seconds_on_item: String value too large."]),
    ({"seconds_on_item": -3}, ["seconds_on_item: Ensure this value is greater than or equal to 0."]),
    ({"has_error": "maybe", "seconds_on_item": -1},
     ["has_error: Must be a valid boolean.", "seconds_on_item: Ensure this value is greater than or equal to 0."]),
    ({"useful": True, "aligned": "no"}, ["aligned, useful is not a question of fact verification."]),
    ({"has_error": False, "error_types": ["entity"], "useful": "yes"},
     ["useful is not a question of fact verification."]),
])
def test_it_refuses_bad_answers_with_words_an_annotator_reads(data, problems):
    assert check(data) == ({}, problems)


@pytest.mark.parametrize("data, values", [
    ({"has_error": "Yes", "ai_right": "off"}, {"has_error": True, "ai_right": False}),
    ({"has_error": 1, "ai_right": 0.0}, {"has_error": True, "ai_right": False}),
    ({"error_types": ["out_of_article", "entity", "entity"]}, {"has_error": True, "ai_right": False,
                                                                "error_types": ["entity", "out_of_article"]}),
    ({"error_types": [ErrorType.RELATION]}, {"has_error": True, "ai_right": False, "error_types": ["relation"]}),
    ({"has_error": "no", "error_types": ["entity"]}, {"has_error": False, "ai_right": True, "error_types": []}),
    ({"error_types": []}, {"error_types": []}),
    ({"seconds_on_item": "12.5"}, {"seconds_on_item": 12.5}),
    ({"seconds_on_item": True}, {"seconds_on_item": 1.0}),
    ({"colour": "red"}, {}),
])
def test_it_reads_answers_as_the_label_stores_them(data, values):
    assert check(data) == (values, [])


def test_error_types_follow_the_stored_error_answer():
    assert check({"error_types": ["entity"]}, stored=Label(has_error=True)) == ({"error_types": ["entity"]}, [])
    assert check({"error_types": ["entity"]}, stored=Label(has_error=False)) == (
        {}, ["error_types: The sentence is marked as having no error; answer yes first to choose types."])


def test_ai_right_needs_a_shown_ai_judgment():
    unit, hit = fv_unit()
    hit.assistance = "highlights"
    assert clean_answers(unit=unit, hit=hit, data={"ai_right": True}, stored=None) == (
        {}, ["ai_right: This item does not show an AI judgment to agree with."])


ANSWER_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10 ** 308, max_value=10 ** 400),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
    st.sampled_from(["yes", "No", "TRUE", "off", "t", "1", "0", "nan", "-inf", "-1", "3.5", "1e400", "", " 2 "]),
    st.lists(st.one_of(st.sampled_from([*ErrorType.values, "made_up", "", "Entity"]), st.none(), st.integers()),
             max_size=6),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


def _words(errors) -> list[str]:
    if isinstance(errors, dict):  # a list's bad items, by index
        return [word for value in errors.values() for word in _words(value)]
    if isinstance(errors, list):
        return [word for value in errors for word in _words(value)]
    return [str(errors)]


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(["has_error", "error_types", "ai_right", "useful", "aligned", "seconds_on_item"]),
       value=ANSWER_VALUES)
def test_it_refuses_what_the_documented_request_refuses_in_the_same_words(name, value):
    documented = AnswerRequestSerializer(data={name: value, "unit": "0"})
    values, problems = check({name: value})
    if not documented.is_valid():
        assert problems == [f"{name}: {word}" for word in _words(documented.errors[name])]
    elif name in FV_QUESTIONS:
        assert problems == [] and set(values) >= {name}
    else:
        assert problems == [f"{name} is not a question of fact verification."]


def test_the_services_do_not_use_the_api_framework():
    for path in sorted((ROOT / "annotation" / "services").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(name.split(".")[0] == "rest_framework" or name.endswith("serializers") for name in names), (
                path.name, names)
