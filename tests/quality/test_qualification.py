"""The screening test (paper G.1): ten questions, an answer key, 100% to pass; unqualified annotators get no HIT
where the project asks for it."""

import pytest
from django.urls import reverse

from annotation.models import Annotator
from annotation.quality.qualification import QUESTIONS, InvalidScreening, mturk_questions, score_answers
from annotation.services.assignment import WorkRefused, reserve_next_hit
from corpus.models import Project
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
    assert reserve_next_hit(me, project, "fv", confirmed=True) is not None
    Project.objects.filter(pk=project.pk).update(qualification_required=Project.Qualification.ALL)
    project.refresh_from_db()
    with pytest.raises(WorkRefused, match="screening test"):
        reserve_next_hit(me, project, "kv", confirmed=True)


def screening_url(project) -> str:
    return reverse("work_screening", args=[project.slug])


def test_the_screening_page_records_a_pass_in_its_project_only(project, other_project, annotator, client):
    import_small(project)
    build_all(project)
    Project.objects.filter(pk__in=[project.pk, other_project.pk]).update(
        qualification_required=Project.Qualification.ALL)
    assert client.get(screening_url(project)).status_code == 302  # Anonymous: log in first.
    client.force_login(annotator)
    page = client.get(screening_url(project))
    assert page.status_code == 200 and page.content.count(b'type="radio"') == sum(len(q.options) for q in QUESTIONS)
    assert client.get(screening_url(other_project)).status_code == 404  # not an annotator there
    response = client.post(f"/work/{project.slug}/fv/next/", follow=True)
    assert b"screening test" in response.content
    assert client.post(screening_url(project), {"q1": "a"}).status_code == 400
    me = Annotator.objects.get(user=annotator)
    assert me.standing_in(project).screening_attempts == 0  # an incomplete form costs no attempt
    assert client.post(screening_url(project), RIGHT).status_code == 302
    assert me.standing_in(project).qualified_at is not None
    assert me.standing_in(other_project).qualified_at is None  # screening is per project
    response = client.post(f"/work/{project.slug}/fv/next/")
    assert "/work/hits/" in response["Location"]


def test_a_failed_attempt_says_what_to_do_but_neither_the_score_nor_the_wrong_answers(project, annotator, client):
    Project.objects.filter(pk=project.pk).update(qualification_required=Project.Qualification.ALL)
    client.force_login(annotator)
    response = client.post(screening_url(project), {**RIGHT, "q10": "a"})
    body = response.content.decode()
    assert response.status_code == 200 and "Not every answer was right" in body
    result = body.split('id="screening-result"')[1].split("</p>")[0]
    assert "9" not in result and "Question 10" not in body and "screening-wrong" not in body
    assert "answer all the questions again (2 attempts left)" in result
    assert f'href="{reverse("work_instructions")}"' in result
    assert 'checked' not in body  # the answers given are not shown back either


def test_after_the_last_attempt_the_annotator_is_refused_with_a_clear_message(project, annotator, client):
    import_small(project)
    build_all(project)
    Project.objects.filter(pk=project.pk).update(qualification_required=Project.Qualification.ALL,
                                                 screening_attempts=2)
    client.force_login(annotator)
    assert client.post(screening_url(project), {**RIGHT, "q1": "b"}).status_code == 200
    last = client.post(screening_url(project), {**RIGHT, "q2": "a"})
    assert last.status_code == 403 and b"did not pass the screening test" in last.content
    assert b"Question 2" not in last.content and b"Your work in other projects is not affected" in last.content
    # The right answers now change nothing: no attempt is left, and no HIT opens.
    assert client.post(screening_url(project), RIGHT).status_code == 403
    me = Annotator.objects.get(user=annotator)
    assert me.standing_in(project).qualified_at is None and me.standing_in(project).screening_attempts == 2
    project.refresh_from_db()
    with pytest.raises(WorkRefused, match="did not pass the screening test"):
        reserve_next_hit(me, project, "fv", confirmed=True)
    response = client.post(f"/work/{project.slug}/fv/next/", follow=True)
    assert b"did not pass the screening test" in response.content
