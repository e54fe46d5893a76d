"""The annotator's home page, "start next HIT" and the instructions page, for every kind of visitor."""

import pytest
from django.urls import reverse

from annotation.models import Annotator, Assignment
from tests.work import annotator_for, crowd_annotator, set_status, work_through

pytestmark = pytest.mark.django_db


def test_anonymous_visitors_are_sent_to_log_in(client, corpus):
    response = client.get(reverse("work_home"))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    response = client.post(reverse("work_next", args=["alpha", "fv"]))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    assert not Assignment.objects.exists()


def test_the_instructions_are_open_to_anybody(client, corpus):
    # MTurk workers read them before accepting a HIT; link and Prolific workers have no log-in to be sent to.
    response = client.get(reverse("work_instructions"))
    assert response.status_code == 200 and b"Fact verification" in response.content
    assert b"My work" not in response.content and corpus.name.encode() not in response.content


def test_annotators_land_on_their_work_and_managers_on_the_projects(client, corpus, annotator, manager):
    client.force_login(annotator)
    assert client.get(reverse("home")).url == reverse("work_home")
    client.force_login(manager)
    assert client.get(reverse("home")).url == reverse("project_list")


def test_the_home_page_counts_the_hits_waiting_per_task(client, corpus, annotator):
    client.force_login(annotator)
    html = client.get(reverse("work_home")).content.decode()
    assert "Demo" not in html and "Alpha" in html
    # 4 FV HITs, 1 KV HIT, 2 KA HITs (the dialogue's imported human key-facts need no validation).
    assert [cell.split("<")[0] for cell in html.split('<td class="num">')[1:]] == ["4", "1", "2"]
    assert Annotator.objects.get(user=annotator).provider == "account"  # made on first use


def test_the_counts_leave_out_hits_that_are_full_or_already_done(client, corpus, annotator):
    for name in ("a", "b", "c"):
        work_through(crowd_annotator(name), corpus, "kv")
    work_through(annotator_for(annotator), corpus, "fv")
    client.force_login(annotator)
    html = client.get(reverse("work_home")).content.decode()
    # KV is full; the news document then got its KA HITs; one FV HIT is done by this annotator.
    assert [cell.split("<")[0] for cell in html.split('<td class="num">')[1:]] == ["3", "0", "4"]


def test_start_next_reserves_a_hit_and_then_resumes_it(client, corpus, annotator):
    client.force_login(annotator)
    response = client.post(reverse("work_next", args=["alpha", "fv"]))
    assignment = Assignment.objects.get()
    assert response.url == reverse("hit_page", args=[assignment.public_id])
    assert client.post(reverse("work_next", args=["alpha", "fv"])).url == response.url
    html = client.get(reverse("work_home")).content.decode()
    assert "Continue your fact verification HIT" in html


def test_start_next_says_so_when_nothing_is_left(client, corpus, annotator):
    corpus.annotators_per_unit = 1
    corpus.save()
    work_through(crowd_annotator("quick"), corpus, "kv")
    client.force_login(annotator)
    response = client.post(reverse("work_next", args=["alpha", "kv"]), follow=True)
    assert "No key-fact validation HIT is waiting for you in Alpha right now." in response.content.decode()


def test_only_the_projects_annotators_can_take_work(client, corpus, manager, outsider, other_annotator):
    url = reverse("work_next", args=["alpha", "fv"])
    client.force_login(manager)
    assert client.post(url).status_code == 403
    client.force_login(outsider)
    assert client.post(url).status_code == 404
    assert client.post(reverse("work_next", args=["nope", "fv"])).status_code == 404
    client.force_login(other_annotator)
    assert client.get(url).status_code == 405
    assert client.post("/work/alpha/xx/next/").status_code == 404  # not a task
    assert Assignment.objects.count() == 0
    assert client.post(url).status_code == 302
    assert Assignment.objects.count() == 1


def test_a_blocked_annotator_is_refused_with_a_reason(client, corpus, annotator):
    set_status(annotator_for(annotator), corpus, "blocked")
    client.force_login(annotator)
    response = client.post(reverse("work_next", args=["alpha", "fv"]))
    assert response.status_code == 403 and b"blocked" in response.content
    assert not Assignment.objects.exists()


def test_the_instructions_explain_every_task_with_examples(client, annotator):
    client.force_login(annotator)
    html = client.get(reverse("work_instructions")).content.decode()
    for anchor in ('id="fv"', 'id="kv"', 'id="ka"', 'id="keys"'):
        assert anchor in html
    assert "Worked example" in html and "Out-of-article error" in html and "<kbd>Enter</kbd>" in html
