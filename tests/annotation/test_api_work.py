"""The REST API of the annotation work, with token and session auth, for every kind of caller."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Assignment, Hit, Label
from tests.work import annotator_for, crowd_annotator, work_through

pytestmark = pytest.mark.django_db


def api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def reserve(client, task="fv", project="alpha"):
    return client.post("/api/assignments/reserve/", {"project": project, "task": task}, format="json")


def test_anonymous_callers_are_refused_everywhere(corpus):
    # 403 rather than 401: session authentication comes first and sends no WWW-Authenticate challenge.
    client = api()
    for url in ("/api/hits/", "/api/units/", "/api/assignments/", "/api/labels/"):
        response = client.get(url)
        assert response.status_code == 403
        assert response.json()["detail"] == "Authentication credentials were not provided."
    assert reserve(client).status_code == 403
    assert not Assignment.objects.exists()


def test_an_annotator_reserves_answers_and_submits_through_the_api(corpus, annotator):
    client = api(annotator)
    response = reserve(client, "kv")
    assert response.status_code == 200
    body = response.json()
    assert body["task"] == "kv" and body["status"] == "reserved" and body["labels"] == []
    assert [unit["text"] for unit in body["units"]] == ["The council voted 7-2.", "The pier will be rebuilt."]
    assert body["units"][0]["highlighted"] == [0] and "keyfact" not in body["units"][0]
    assignment_id = body["id"]
    # Asking again hands back the same reservation.
    assert reserve(client, "kv").json()["id"] == assignment_id
    answer = client.post(f"/api/assignments/{assignment_id}/answers/", {"unit": 0, "useful": True}, format="json")
    assert answer.status_code == 200 and answer.json()["useful"] is True and answer.json()["missing"] == []
    refused = client.post(f"/api/assignments/{assignment_id}/submit/", {}, format="json")
    assert refused.status_code == 400
    assert refused.json()["missing"] == [{"item": "key-fact 2", "position": 1, "questions": ["is it useful?"]}]
    unit_id = body["units"][1]["id"]
    client.post(f"/api/assignments/{assignment_id}/answers/", {"unit": unit_id, "useful": False}, format="json")
    done = client.post(f"/api/assignments/{assignment_id}/submit/", {"submission_key": "abc"}, format="json")
    assert done.status_code == 200 and done.json()["already_submitted"] is False
    again = client.post(f"/api/assignments/{assignment_id}/submit/", {"submission_key": "abc"}, format="json")
    assert again.status_code == 200 and again.json()["already_submitted"] is True
    assert Assignment.objects.get().submission_key == "abc"
    assert reserve(client, "kv").status_code == 204  # nothing else to do


@pytest.mark.parametrize("payload, text", [
    ({"unit": 0, "useful": "perhaps"}, "Must be a valid boolean"),
    ({"unit": 0, "has_error": True}, "not a question of key-fact validation"),
    ({"unit": 7, "useful": True}, "`unit` must be"),
    ({"unit": "not-a-uuid", "useful": True}, "`unit` must be"),
    ({"useful": True}, "`unit` must be"),
    ({"unit": 0, "useful": None}, "This field may not be null"),
    ({"unit": 0, "useful": True, "extra": 1}, "Unknown field(s): extra"),
    ({"unit": 0, "seconds_on_item": "soon"}, "A valid number is required"),
    ({"unit": 0}, "No answer was sent"),
])
def test_bad_answers_get_a_clear_400_and_nothing_is_written(corpus, annotator, payload, text):
    client = api(annotator)
    assignment_id = reserve(client, "kv").json()["id"]
    response = client.post(f"/api/assignments/{assignment_id}/answers/", payload, format="json")
    assert response.status_code == 400
    assert text in response.json()["detail"]
    assert not Label.objects.exists()


def test_bad_reservations_are_refused(corpus, annotator, manager, outsider):
    client = api(annotator)
    assert reserve(client, "xx").status_code == 400
    assert "task" in reserve(client, "xx").json()
    assert reserve(client, "fv", project="nope").status_code == 404
    assert reserve(api(manager)).status_code == 403
    assert reserve(api(outsider)).status_code == 404
    assert not Assignment.objects.exists()


def test_nobody_acts_on_or_reads_another_annotators_assignment(corpus, annotator, other_annotator, manager,
                                                                outsider):
    mine = api(annotator)
    assignment_id = reserve(mine, "kv").json()["id"]
    mine.post(f"/api/assignments/{assignment_id}/answers/", {"unit": 0, "useful": True}, format="json")
    for user in (other_annotator, manager, outsider):
        client = api(user)
        for action in ("answers", "submit", "return"):
            response = client.post(f"/api/assignments/{assignment_id}/{action}/", {"unit": 0, "useful": False},
                                   format="json")
            assert response.status_code == 404, (user, action)
    assert Label.objects.get().useful is True
    # Reading: the owner and the manager see it; the other annotator and the outsider do not.
    assert api(other_annotator).get(f"/api/assignments/{assignment_id}/").status_code == 404
    assert api(outsider).get(f"/api/assignments/{assignment_id}/").status_code == 404
    assert api(manager).get(f"/api/assignments/{assignment_id}/").json()["labels"][0]["useful"] is True
    assert api(other_annotator).get("/api/labels/").json()["results"] == []
    assert api(outsider).get("/api/labels/").json()["count"] == 0
    assert api(annotator).get("/api/labels/").json()["count"] == 1
    assert api(manager).get("/api/labels/?project=alpha").json()["count"] == 1


def test_lists_are_scoped_and_paginated(corpus, annotator, other_annotator, manager, outsider):
    work_through(annotator_for(annotator), corpus, "fv")
    work_through(crowd_annotator("w"), corpus, "fv")
    hits = api(manager).get("/api/hits/?task=fv").json()
    assert hits["count"] == 4 and {"next", "previous", "results"} <= set(hits)
    assert hits["results"][0]["unit_count"] >= 1 and hits["results"][0]["assistance"] == "reason"
    assert api(annotator).get("/api/hits/").json()["count"] == 1
    assert api(other_annotator).get("/api/hits/").json()["count"] == 0
    assert api(outsider).get("/api/hits/").json()["count"] == 0
    assert api(manager).get("/api/assignments/").json()["count"] == 2
    assert api(annotator).get("/api/assignments/").json()["count"] == 1
    assert api(other_annotator).get("/api/units/").json()["count"] == 0
    manager_units = api(manager).get("/api/units/?page=1").json()
    assert manager_units["count"] == Hit.objects.get(task="fv", position=0).units.count() + sum(
        hit.units.count() for hit in Hit.objects.exclude(task="fv", position=0))
    assert api(manager).get("/api/labels/").json()["count"] == 2 * Hit.objects.get(
        task="fv", position=0).units.count()


def test_units_leave_out_what_the_assistance_level_hides_from_annotators(corpus, annotator, manager):
    corpus.assistance = "highlights"
    corpus.save()
    client = api(annotator)
    body = reserve(client, "fv").json()
    assert {"highlighted", "text"} <= set(body["units"][0])
    assert not {"ai_category", "ai_reason", "ai_source"} & set(body["units"][0])
    unit = client.get(f"/api/units/{body['units'][0]['id']}/").json()
    assert "ai_category" not in unit and unit["hit"] == body["hit"]
    # The manager sees what was computed, hidden or not.
    assert "ai_category" in api(manager).get(f"/api/units/{body['units'][0]['id']}/").json()


def test_session_auth_needs_the_csrf_token(corpus, annotator):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(annotator)
    assert reserve(client).status_code == 403
    assert not Assignment.objects.exists()


def test_the_openapi_schema_lists_the_work_endpoints(client, manager):
    client.force_login(manager)
    schema = client.get("/api/schema/").content.decode()
    for path in ("/api/hits/", "/api/units/", "/api/assignments/reserve/", "/api/assignments/{public_id}/answers/",
                 "/api/assignments/{public_id}/submit/", "/api/labels/"):
        assert path in schema


def test_lists_take_a_fixed_number_of_queries(project, manager, annotator, django_assert_max_num_queries):
    from tests.work import build_all, import_generated

    import_generated(project, documents=4, summarizers=3)
    build_all(project)
    for index in range(3):
        work_through(crowd_annotator(f"n{index}"), project, "fv")
    assignment_id = reserve(api(annotator)).json()["id"]
    for user, url in ((manager, "/api/hits/"), (manager, "/api/units/"), (manager, "/api/assignments/"),
                      (manager, "/api/labels/"), (annotator, f"/api/assignments/{assignment_id}/"),
                      (annotator, "/api/units/")):
        client = api(user)
        with django_assert_max_num_queries(10):
            assert client.get(url).status_code == 200
