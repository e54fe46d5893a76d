"""The screening test (paper G.1): ten questions, an answer key, 100% to pass; unqualified annotators get no HIT
where the project asks for it."""

import pytest

from annotation.models import Annotator, Project
from annotation.quality.qualification import QUESTIONS, InvalidScreening, mturk_questions, score_answers
from annotation.services.assignment import WorkRefused, reserve_next_hit
from tests.work import annotator_for, build_all, import_small

pytestmark = pytest.mark.django_db
RIGHT = {q.key: q.answer for q in QUESTIONS}


def test_the_test_has_ten_multiple_choice_questions_with_a_valid_key():
    assert len(QUESTIONS) == 10 and len({q.key for q in QUESTIONS}) == 10
    for question in QUESTIONS:
        assert len(question.options) >= 2 and question.answer in dict(question.options)
    data = mturk_questions()
    assert sum(q["score"] for q in data) == 100
    assert all(q["answer"] in {o["identifier"] for o in q["options"]} for q in data)


def test_only_all_right_passes_and_incomplete_answers_are_refused():
    assert score_answers(RIGHT).passed
    one_wrong = {**RIGHT, "q3": "a"}
    assert (score_answers(one_wrong).correct, score_answers(one_wrong).passed) == (9, False)
    with pytest.raises(InvalidScreening):
        score_answers({**RIGHT, "q1": ""})
    with pytest.raises(InvalidScreening):
        score_answers({**RIGHT, "q1": "z"})


def test_accounts_need_no_test_by_default_but_do_when_the_project_says_so(project, annotator, client):
    import_small(project)
    build_all(project)
    me = annotator_for(annotator)
    assert reserve_next_hit(me, project, "fv") is not None
    Project.objects.filter(pk=project.pk).update(qualification_required=Project.Qualification.ALL)
    project.refresh_from_db()
    with pytest.raises(WorkRefused, match="screening test"):
        reserve_next_hit(me, project, "kv")


def test_the_screening_page_records_a_pass(project, annotator, client):
    import_small(project)
    build_all(project)
    Project.objects.filter(pk=project.pk).update(qualification_required=Project.Qualification.ALL)
    assert client.get("/work/screening/").status_code == 302  # Anonymous: log in first.
    client.force_login(annotator)
    page = client.get("/work/screening/")
    assert page.status_code == 200 and page.content.count(b'type="radio"') == sum(len(q.options) for q in QUESTIONS)
    response = client.post(f"/work/{project.slug}/fv/next/", follow=True)
    assert b"screening test" in response.content
    assert client.post("/work/screening/", {"q1": "a"}).status_code == 400
    assert Annotator.objects.get(user=annotator).qualified_at is None
    response = client.post("/work/screening/", {**RIGHT, "q10": "a"})
    assert response.status_code == 200 and b"9 of 10" in response.content
    assert Annotator.objects.get(user=annotator).qualified_at is None
    assert client.post("/work/screening/", RIGHT).status_code == 302
    assert Annotator.objects.get(user=annotator).qualified_at is not None
    response = client.post(f"/work/{project.slug}/fv/next/")
    assert "/work/hits/" in response["Location"]
