"""The HIT page, the per-answer endpoint, submit and return: tried by the annotator, another annotator, the manager,
an outsider and an anonymous visitor."""

import re
from datetime import timedelta

import pytest
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from annotation.ai_agreement import ai_says_error
from annotation.models import Assignment, Hit, Label
from annotation.services.assignment import reserve_next_hit
from tests.work import add_assistance, annotator_for, build_all, import_generated

pytestmark = pytest.mark.django_db


@pytest.fixture
def fv_assignment(corpus, annotator):
    return reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)


def page_url(assignment):
    return reverse("hit_page", args=[assignment.public_id])


def answer_url(assignment, position):
    return reverse("hit_answer", args=[assignment.public_id, position])


def submit_url(assignment):
    return reverse("hit_submit", args=[assignment.public_id])


def reserve_for(user, project, task, **hit_filter):
    """Reserve a specific HIT for `user` by putting it first in line."""
    hit = Hit.objects.filter(project=project, task=task, **hit_filter).get()
    Hit.objects.filter(project=project, task=task).exclude(pk=hit.pk).update(position=F("position") + 1000)
    assignment = reserve_next_hit(annotator_for(user), project, task, confirmed=True)
    assert assignment.hit == hit
    return assignment


def test_only_its_annotator_sees_a_hit(client, fv_assignment, annotator, other_annotator, manager, outsider):
    url = page_url(fv_assignment)
    response = client.get(url)
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    for user in (other_annotator, manager, outsider):
        client.force_login(user)
        assert client.get(url).status_code == 404
    client.force_login(annotator)
    assert client.get(url).status_code == 200


def test_it_shows_the_sentences_the_ai_judgment_and_the_numbered_source(client, corpus, annotator):
    assignment = reserve_for(annotator, corpus, "fv", document__uid="t-news-1", summary__model="m-bad")
    client.force_login(annotator)
    html = client.get(page_url(assignment)).content.decode()
    assert "The council voted 9-0 to demolish the pier." in html
    assert "Relation error" in html and "The source says the pier is rebuilt, not demolished." in html
    assert "Offline labeler (sentence similarity and rules, not an LLM)" in html
    assert "Is the AI right?" in html and 'name="u0-ai_right"' in html
    assert 'id="item-0"' in html and 'data-highlight="1"' in html
    assert '<span class="sentence" id="s0"><sup>1</sup>The Harbor Council voted 7-2' in html
    assert "<script src=\"/static/finegrain/hit.js\" defer></script>" in html
    # No inline script anywhere: the CSP allows only files.
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)


def test_dialogues_are_shown_by_speaker_turn_and_everything_is_escaped(client, corpus, annotator):
    assignment = reserve_for(annotator, corpus, "fv", document__uid="t-dial-1", summary__model="m-bad")
    client.force_login(annotator)
    html = client.get(page_url(assignment)).content.decode()
    assert '<p class="turn spoken"><span class="speaker">SYSTEM</span>' in html
    assert "&lt;PHONENUMBER_1&gt;" in html and "<PHONENUMBER_1>" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html and "<script>alert" not in html
    assert "&lt;p&gt;Bye&lt;/p&gt;" in html and "The system booked &lt;PLACE_2&gt; at &lt;TIME_2&gt;." in html


@pytest.mark.parametrize("level, highlights, label, reason", [
    ("none", False, False, False), ("highlights", True, False, False), ("label", True, True, False),
    ("reason", True, True, True)])
def test_the_assistance_level_decides_what_is_in_the_html(client, corpus, annotator, level, highlights, label,
                                                          reason):
    corpus.assistance = level
    corpus.save()
    assignment = reserve_for(annotator, corpus, "fv", document__uid="t-news-1", summary__model="m-bad")
    client.force_login(annotator)
    html = client.get(page_url(assignment)).content.decode()
    assert ("data-highlight" in html) is highlights
    assert ('<div class="ai-judgment">' in html) is label and ("Offline labeler" in html) is label
    assert ('name="u0-ai_right"' in html) is label
    assert ("not demolished" in html) is reason


def test_a_hit_can_override_the_project_assistance(client, corpus, annotator):
    hit = Hit.objects.get(task="fv", document__uid="t-news-1", summary__model="m-bad")
    Hit.objects.filter(pk=hit.pk).update(assistance="highlights")
    assignment = reserve_for(annotator, corpus, "fv", pk=hit.pk)
    client.force_login(annotator)
    html = client.get(page_url(assignment)).content.decode()
    assert "data-highlight" in html, html
    assert '<div class="ai-judgment">' not in html and "not demolished" not in html and 'name="u0-ai_right"' not in html


def test_the_page_takes_the_same_few_queries_whatever_the_size(client, project, annotator,
                                                                django_assert_max_num_queries):
    import_generated(project, documents=2, summarizers=2, sentences=40, words_per_sentence=30)
    add_assistance(project)
    build_all(project)
    client.force_login(annotator)
    for task in ("fv", "kv"):
        assignment = reserve_next_hit(annotator_for(annotator), project, task, confirmed=True)
        unit = assignment.hit.units.first()
        client.post(answer_url(assignment, unit.position),
                    {f"u{unit.position}-has_error": "no"} if task == "fv" else {f"u{unit.position}-useful": "yes"})
        assert assignment.hit.units.count() >= 2
        with django_assert_max_num_queries(10):
            assert client.get(page_url(assignment)).status_code == 200


def test_each_answer_is_saved_as_it_is_given_and_a_reload_shows_it(client, fv_assignment, annotator):
    Assignment.objects.filter(pk=fv_assignment.pk).update(reserved_at=timezone.now() - timedelta(minutes=1))
    client.force_login(annotator)
    response = client.post(answer_url(fv_assignment, 0), {"u0-ai_right": "no", "u0-has_error": "yes",
                                                           "u0-error_types": ["", "relation"], "u0-seconds": "4.5"},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert 'id="state-0"' in response.content.decode() and "Saved" in response.content.decode()
    label = Label.objects.get()
    assert (label.ai_right, label.has_error, label.error_types, label.seconds_on_item) == (
        False, True, ["relation"], 4.5)
    html = client.get(page_url(fv_assignment)).content.decode()
    assert 'name="u0-has_error" value="yes" checked' in html
    assert 'name="u0-ai_right" value="no" checked' in html
    assert 'value="relation" checked' in html and 'name="u0-seconds" value="4.5"' in html
    # Changing an answer updates the same label.
    client.post(answer_url(fv_assignment, 0), {"u0-has_error": "no", "u0-error_types": ""})
    label.refresh_from_db()
    assert (label.has_error, label.error_types, Label.objects.count()) == (False, [], 1)


@pytest.mark.parametrize("data, status, text", [
    ({"u0-has_error": "maybe"}, 400, "Must be a valid boolean"),
    ({"u0-error_types": ["", "typo"]}, 400, "typo"),
    ({"u0-useful": "yes"}, 400, "not a question of fact verification"),
    ({"u0-colour": "red"}, 400, "colour is not a question"),
    ({"u1-has_error": "no"}, 400, "no such item"),
    ({"u0-seconds": "-3"}, 400, "greater than or equal to 0"),
    ({}, 400, "No answer was sent."),
    ({"u0-has_error": ""}, 400, "No answer was sent."),
])
def test_bad_answers_get_a_clear_4xx_and_nothing_is_written(client, fv_assignment, annotator, data, status, text):
    client.force_login(annotator)
    response = client.post(answer_url(fv_assignment, 0), data)
    assert response.status_code == status
    assert text in response.content.decode()
    assert not Label.objects.exists()


def test_nobody_else_can_answer_and_unknown_items_are_404(client, fv_assignment, annotator, other_annotator,
                                                           manager, outsider):
    url = answer_url(fv_assignment, 0)
    assert client.post(url, {"u0-has_error": "no"}).status_code == 302
    for user in (other_annotator, manager, outsider):
        client.force_login(user)
        assert client.post(url, {"u0-has_error": "no"}).status_code == 404
    client.force_login(annotator)
    assert client.post(answer_url(fv_assignment, 99), {"u99-has_error": "no"}).status_code == 404
    assert client.get(url).status_code == 405
    assert not Label.objects.exists()


def _all_answers(assignment) -> dict:
    data = {"submission_key": "k1"}
    for unit in assignment.hit.units.all():
        data[f"u{unit.position}-has_error"] = "no"
        data[f"u{unit.position}-error_types"] = ""
        if "ai_right" in unit.question_fields(assignment.hit):
            data[f"u{unit.position}-ai_right"] = "no" if ai_says_error(unit.ai_category) else "yes"
    return data


def test_the_plain_form_submits_every_answer_without_javascript(client, fv_assignment, annotator):
    client.force_login(annotator)
    response = client.post(submit_url(fv_assignment), _all_answers(fv_assignment), follow=True)
    assert response.redirect_chain[-1][0] == reverse("work_home")
    assert "HIT submitted. Thank you!" in response.content.decode()
    fv_assignment.refresh_from_db()
    assert fv_assignment.status == "submitted" and fv_assignment.submission_key == "k1"
    assert Label.objects.filter(assignment=fv_assignment).count() == fv_assignment.hit.units.count()
    # Resent (double click, back button): one submission, a clear message.
    response = client.post(submit_url(fv_assignment), _all_answers(fv_assignment), follow=True)
    assert "already submitted; nothing changed" in response.content.decode()
    assert client.get(page_url(fv_assignment)).status_code == 302


def test_a_submit_with_missing_answers_is_refused_listing_them(client, corpus, annotator):
    assignment = reserve_for(annotator, corpus, "fv", document__uid="t-news-1", summary__model="m-good")
    client.force_login(annotator)
    response = client.post(submit_url(assignment), {"u0-has_error": "yes", "u0-error_types": ""})
    html = response.content.decode()
    assert response.status_code == 400
    assert "Not submitted: 2 items still need an answer." in html
    # "Is the AI right?" follows from the error answer given (annotation.ai_agreement).
    assert "Sentence 1: which error types?" in html
    assert "Sentence 2: is the AI right?, does it have a factual error?" in html
    assignment.refresh_from_db()
    assert assignment.status == "reserved"
    assert Label.objects.get().has_error is True  # what was given is kept


def test_a_submit_with_bad_input_writes_nothing(client, fv_assignment, annotator):
    client.force_login(annotator)
    data = {**_all_answers(fv_assignment), "u0-has_error": "perhaps"}
    response = client.post(submit_url(fv_assignment), data)
    assert response.status_code == 400 and "Nothing was saved" in response.content.decode()
    assert not Label.objects.exists()
    assert Assignment.objects.get(pk=fv_assignment.pk).status == "reserved"


def test_nobody_else_can_submit_or_return(client, fv_assignment, other_annotator, manager, outsider):
    for user in (other_annotator, manager, outsider):
        client.force_login(user)
        assert client.post(submit_url(fv_assignment), _all_answers(fv_assignment)).status_code == 404
        assert client.post(reverse("hit_return", args=[fv_assignment.public_id])).status_code == 404
    assert Assignment.objects.get(pk=fv_assignment.pk).status == "reserved"


def test_an_annotator_returns_a_hit(client, fv_assignment, annotator):
    client.force_login(annotator)
    response = client.post(reverse("hit_return", args=[fv_assignment.public_id]), follow=True)
    assert "You returned the HIT" in response.content.decode()
    assert Assignment.objects.get(pk=fv_assignment.pk).status == "returned"
    assert client.get(page_url(fv_assignment)).status_code == 302


def test_the_kv_page_asks_about_each_candidate(client, corpus, annotator):
    assignment = reserve_next_hit(annotator_for(annotator), corpus, "kv", confirmed=True)
    client.force_login(annotator)
    html = client.get(page_url(assignment)).content.decode()
    assert html.count("Is it useful for a good summary?") == 2
    assert "The council voted 7-2." in html and 'name="u1-useful"' in html and 'data-highlight="0"' in html
    assert "AI judgment" not in html


def test_the_ka_page_pairs_every_keyfact_with_every_sentence(client, corpus, annotator):
    assignment = reserve_for(annotator, corpus, "ka", document__uid="t-dial-1", summary__model="m-bad")
    client.force_login(annotator)
    html = client.get(page_url(assignment)).content.decode()
    assert '<table class="ka-matrix" id="ka-matrix">' in html and "A table for two is booked." in html
    assert '<span class="tag">S1</span>' in html and '<span class="tag">S2</span>' in html
    assert ("Can key-fact 1 be inferred from sentence 1?" in html and "Can key-fact 1 be inferred from sentence 2?" in html
            and 'name="u1-aligned"' in html)
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    response = client.post(answer_url(assignment, 1), {"u1-aligned": "no"})
    assert response.status_code == 200 and Label.objects.get().aligned is False
