"""One caller per request: a crowd session acts only on the crowd worker's own routes, for what it is bound to, and
never beside a log-in (annotation.crowd.tokens.OneCallerPerRequest); a forged arrival's token is worth nothing
anywhere else. The wider sweep of every route and caller is tests/reliability/test_role_matrix.py."""

import inspect

import pytest
from django.test import Client
from django.urls import Resolver404, resolve, reverse

from annotation.crowd import claims
from annotation.crowd.links import link_annotator, link_create
from annotation.models import Annotator, Assignment, CrowdBatch
from annotation.services.assignment import WorkRefused, reserve_next_hit
from tests.work import annotator_for, qualify

pytestmark = pytest.mark.django_db


@pytest.fixture
def claim(corpus, monkeypatch):
    """A Prolific arrival that Prolific could not confirm: a claim on a real participant's id, with its token."""
    batch = CrowdBatch.objects.create(project=corpus, task="fv", provider="prolific", status="published",
                                      reward_usd="0.60", assignments_per_hit=3, external_id="f" * 24)
    qualify(Annotator.objects.create(provider="prolific", external_id="e" * 24), corpus)
    monkeypatch.setattr(claims, "_prolific_session", lambda *args: False)
    assignment, token = claims.prolific_arrive(batch=batch, participant_id="e" * 24, study_id=batch.external_id,
                                               session_id="FORGEDSESSION")
    assert assignment.confirmed_at is None
    return assignment, token


def test_it_refuses_a_crowd_token_beside_a_log_in_on_the_api_and_reserves_nothing(claim, annotator, corpus):
    _, token = claim
    qualify(annotator_for(annotator), corpus)
    client = Client()
    client.force_login(annotator)
    before = Assignment.objects.count()
    response = client.post("/api/assignments/reserve/", {"project": corpus.slug, "task": "kv"},
                           content_type="application/json", HTTP_X_FINEGRAIN_SESSION=token)
    assert response.status_code == 403
    assert "both a log-in and a crowd worker's session" in response.json()["detail"]
    assert Assignment.objects.count() == before
    # The same account without the token is served as itself.
    assert client.post("/api/assignments/reserve/", {"project": corpus.slug, "task": "kv"},
                       content_type="application/json").status_code == 200
    assert not Assignment.objects.filter(annotator__provider="prolific", hit__task="kv").exists()


def test_it_refuses_a_crowd_token_beside_a_log_in_on_the_hit_page_too(claim, annotator):
    assignment, token = claim
    client = Client()
    client.force_login(annotator)
    response = client.get(reverse("hit_page", args=[assignment.public_id]), {"ct": token})
    assert response.status_code == 403 and b"both a log-in" in response.content


def test_the_api_does_not_honour_a_crowd_token_alone(claim, corpus):
    assignment, token = claim
    client = Client()
    reserve = client.post("/api/assignments/reserve/", {"project": corpus.slug, "task": "kv"},
                          content_type="application/json", HTTP_X_FINEGRAIN_SESSION=token)
    assert reserve.status_code == 403 and "accounts only" in reserve.json()["detail"]
    answers = client.post(f"/api/assignments/{assignment.public_id}/answers/", {"unit": "0", "has_error": True},
                          content_type="application/json", HTTP_X_FINEGRAIN_SESSION=token)
    assert answers.status_code == 403
    assert not assignment.labels.exists()
    assert Assignment.objects.filter(annotator=assignment.annotator).count() == 1


def test_a_crowd_token_works_on_its_own_hit_page_and_nowhere_else(claim, corpus):
    assignment, token = claim
    client = Client()
    assert client.get(reverse("hit_page", args=[assignment.public_id]), {"ct": token}).status_code == 200
    for url in (reverse("work_home"), reverse("project_list"), reverse("work_next", args=[corpus.slug, "fv"])):
        assert client.get(url, {"ct": token}).status_code == 403, url
    assert client.post(reverse("work_next", args=[corpus.slug, "kv"]), {"crowd_token": token}).status_code == 403


def test_a_private_link_worker_reserves_only_the_links_task(corpus):
    link = link_create(project=corpus, task="fv", label="FV only")
    worker = qualify(link_annotator(link=link), corpus)
    assignment, token = claims.link_next(link=link, annotator=worker)
    # The page for another task's next HIT refuses the link's session ...
    response = Client().post(reverse("work_next", args=[corpus.slug, "kv"]), {"crowd_token": token})
    assert response.status_code == 403
    # ... and so does the service, whoever asks it.
    with pytest.raises(WorkRefused, match="only its own task"):
        reserve_next_hit(worker, corpus, "kv", confirmed=True)
    assert list(Assignment.objects.filter(annotator=worker)) == [assignment]
    assert assignment.hit.task == "fv"


def test_a_reservation_says_whether_its_caller_is_confirmed():
    confirmed = inspect.signature(reserve_next_hit).parameters["confirmed"]
    assert confirmed.default is inspect.Parameter.empty and confirmed.kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("path", ["/api/assignments/reserve.json", "/api/assignments/{id}/answers.json",
                                  "/api/assignments/{id}/submit.json", "/api/assignments/{id}/return.json",
                                  "/api/hits/{id}/assistance.json", "/api/grades/{id}/override.json",
                                  "/api/hits.json", "/api/projects/alpha.json"])
def test_the_api_has_no_format_suffix_twins(path, corpus, annotator):
    url = path.format(id="00000000-0000-0000-0000-000000000007")
    with pytest.raises(Resolver404):
        resolve(url)
    client = Client()
    client.force_login(annotator)
    assert client.post(url, {}, content_type="application/json").status_code == 404
