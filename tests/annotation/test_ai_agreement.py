"""Fact verification with the AI judgment shown is one decision: the rule (annotation.ai_agreement) by itself, then
each place that applies it: the answers' validation, the HIT page (one item, and the plain form), the API, the
grading of attention checks and the screening test's key. A pair that contradicts itself is refused with a clear
message and nothing is saved; either half alone gives the other."""

import pytest
from django.urls import reverse

from annotation.ai_agreement import ai_right_for, ai_says_error, contradiction, derive, has_error_for
from annotation.models import Assignment, AttentionCheck, Hit, Label, Unit
from annotation.quality.grading import check_outcome
from annotation.quality.qualification import QUESTIONS, answer_pair_question, score_answers
from annotation.services.answers import clean_answers
from annotation.services.assignment import reserve_next_hit
from corpus.models import Project
from tests.annotation.test_api_work import api, reserve
from tests.work import annotator_for

# (AI category, has an error?, AI right?) -> contradicts itself?
TABLE = [
    ("no_error", False, True, False), ("no_error", True, False, False),
    ("no_error", True, True, True), ("no_error", False, False, True),
    ("relation", True, True, False), ("relation", False, False, False),
    ("relation", False, True, True), ("relation", True, False, True),
]


@pytest.mark.parametrize("category, has_error, ai_right, contradicts", TABLE)
def test_the_ai_is_right_exactly_when_both_say_the_same(category, has_error, ai_right, contradicts):
    assert (contradiction(category, has_error=has_error, ai_right=ai_right) is not None) is contradicts
    if not contradicts:
        assert ai_right_for(category, has_error) is ai_right and has_error_for(category, ai_right) is has_error
        assert derive(category, has_error=has_error, ai_right=None) == (has_error, ai_right)
        assert derive(category, has_error=None, ai_right=ai_right) == (has_error, ai_right)


def test_the_message_says_what_follows_from_what():
    assert contradiction("no_error", has_error=True, ai_right=True) == (
        "The AI judged no error and you answered that the sentence has an error, so the AI is wrong; you also "
        "answered that it is right.")
    assert contradiction("entity", has_error=False, ai_right=True) == (
        "The AI judged an error and you answered that the sentence has no error, so the AI is wrong; you also "
        "answered that it is right.")


def test_without_an_ai_judgment_nothing_follows():
    assert ai_says_error("") is None and ai_right_for("", True) is None and has_error_for("", True) is None
    assert contradiction("", has_error=True, ai_right=True) is None


def fv(category: str) -> tuple[Unit, Hit]:
    hit = Hit(project=Project(slug="p", assistance="reason"), task="fv")
    return Unit(hit=hit, task="fv", position=0, ai_category=category), hit


@pytest.mark.parametrize("category, data", [
    ("no_error", {"ai_right": "yes", "has_error": "yes", "error_types": ["entity"]}),
    ("relation", {"ai_right": True, "has_error": False}),
])
def test_a_contradictory_pair_is_refused(category, data):
    unit, hit = fv(category)
    values, problems = clean_answers(unit=unit, hit=hit, data=data, stored=None)
    assert values == {} and len(problems) == 1 and problems[0].startswith("ai_right: The AI judged")


@pytest.mark.parametrize("category, data, pair", [
    ("no_error", {"ai_right": True}, (False, True)),
    ("no_error", {"ai_right": False}, (True, False)),
    ("relation", {"ai_right": True}, (True, True)),
    ("relation", {"has_error": False}, (False, False)),
    ("no_error", {"error_types": ["entity"]}, (True, False)),
])
def test_either_half_gives_the_other(category, data, pair):
    unit, hit = fv(category)
    values, problems = clean_answers(unit=unit, hit=hit, data=data, stored=Label(ai_right=True))
    assert problems == [] and (values["has_error"], values["ai_right"]) == pair


def test_agreeing_with_an_ai_no_error_clears_the_error_types():
    unit, hit = fv("no_error")
    values, _ = clean_answers(unit=unit, hit=hit, data={"ai_right": True},
                              stored=Label(has_error=True, error_types=["entity"], ai_right=False))
    assert values == {"ai_right": True, "has_error": False, "error_types": []}


# --- The entry points, on the small corpus (its AI says "relation" on sentences about the pier, else "no error").

def contradictory(unit: Unit) -> dict:
    """The pair that says the AI is right and, at once, the opposite of what the AI said."""
    return {"ai_right": True, "has_error": not ai_says_error(unit.ai_category)}


@pytest.fixture
def fv_assignment(corpus, annotator):
    assignment = reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)
    assert all("ai_right" in unit.question_fields(assignment.hit) for unit in assignment.hit.units.all())
    return assignment


def form(unit: Unit, answers: dict) -> dict:
    return {f"u{unit.position}-{name}": "yes" if value else "no" for name, value in answers.items()}


def test_the_page_refuses_a_contradictory_item_and_saves_nothing(client, fv_assignment, annotator,
                                                                  other_annotator):
    unit = fv_assignment.hit.units.order_by("position").first()
    url = reverse("hit_answer", args=[fv_assignment.public_id, unit.position])
    client.force_login(other_annotator)
    assert client.post(url, form(unit, contradictory(unit)), HTTP_HX_REQUEST="true").status_code == 404
    client.force_login(annotator)
    response = client.post(url, form(unit, contradictory(unit)), HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert "Not saved: Nothing was saved" in response.content.decode() and "so the AI is" in response.content.decode()
    assert not Label.objects.exists()
    # One half alone is saved with the other.
    assert client.post(url, {f"u{unit.position}-has_error": "no"}, HTTP_HX_REQUEST="true").status_code == 200
    label = Label.objects.get()
    assert (label.has_error, label.ai_right) == (False, ai_right_for(unit.ai_category, False))


def test_the_plain_form_refuses_a_contradictory_pair_and_submits_nothing(client, fv_assignment, annotator):
    data = {"submission_key": "k1"}
    units = list(fv_assignment.hit.units.order_by("position"))
    for unit in units:
        data.update(form(unit, {"has_error": False, "ai_right": ai_right_for(unit.ai_category, False)}))
    data.update(form(units[-1], contradictory(units[-1])))
    client.force_login(annotator)
    response = client.post(reverse("hit_submit", args=[fv_assignment.public_id]), data)
    assert response.status_code == 400 and "so the AI is" in response.content.decode()
    assert not Label.objects.exists()
    assert Assignment.objects.get(pk=fv_assignment.pk).status == Assignment.Status.RESERVED


def test_the_api_refuses_a_contradictory_pair_and_saves_nothing(corpus, annotator, other_annotator):
    client = api(annotator)
    body = reserve(client, "fv").json()
    unit = Unit.objects.get(public_id=body["units"][0]["id"])
    url = f"/api/assignments/{body['id']}/answers/"
    assert api(other_annotator).post(url, {"unit": 0, **contradictory(unit)}, format="json").status_code == 404
    response = client.post(url, {"unit": 0, **contradictory(unit)}, format="json")
    assert response.status_code == 400
    assert "ai_right: The AI judged" in response.json()["detail"]
    assert not Label.objects.exists()
    saved = client.post(url, {"unit": 0, "ai_right": False}, format="json")
    assert saved.status_code == 200
    assert (saved.json()["ai_right"], saved.json()["has_error"]) == (False, not ai_says_error(unit.ai_category))


def test_grading_fails_a_check_answered_with_a_contradictory_pair(fv_assignment):
    """A label written before the rule (or by a bulk writer) that contradicts itself fails its check, even where
    the check grades only the error answer."""
    unit = fv_assignment.hit.units.order_by("position").first()
    AttentionCheck.objects.filter(unit__hit=fv_assignment.hit).delete()
    AttentionCheck.objects.create(unit=unit, kind=AttentionCheck.Kind.FV_AI_SAYS_CORRECT,
                                  expected={"has_error": not ai_says_error(unit.ai_category)})
    label = Label.objects.create(assignment=fv_assignment, unit=unit, annotator=fv_assignment.annotator,
                                 **contradictory(unit))
    outcome = check_outcome(fv_assignment)
    assert [check.passed for check in outcome.checks] == [False]
    assert outcome.checks[0].problem.startswith(f"Sentence {unit.position + 1}: The AI judged")
    Label.objects.filter(pk=label.pk).update(ai_right=False)
    outcome = check_outcome(fv_assignment)
    assert [check.passed for check in outcome.checks] == [True], outcome.checks


def test_the_screening_key_is_the_rule():
    question = next(question for question in QUESTIONS if question.key == "q5")
    assert question.answer == "b"
    right = {q.key: q.answer for q in QUESTIONS}
    assert score_answers(right).passed
    assert not score_answers({**right, "q5": "c"}).passed  # "the AI is right" and "has an error" at once
    with pytest.raises(ValueError, match="exactly one right pair"):
        answer_pair_question("qx", "?", ai_category="no_error", has_error=True, options=(
            ("a", "Right and an error.", (True, True)), ("b", "Wrong and no error.", (False, False))))
