"""Bad input at the doors of the site (config/request_guard.py): a 400 or 413 with a message, nothing written.

PostgreSQL refuses NUL in a query as in a row, so `?project=%00` failed inside the view (500) where SQLite simply
found nothing; a body nested a hundred thousand levels deep made DRF's JSON parser raise RecursionError (500).
"""

import json

import pytest
from django.test import Client

from annotation.models import Assignment, Label
from annotation.services.answers import save_answers
from annotation.services.assignment import reserve_next_hit
from tests.work import annotator_for, answers_for

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.fixture
def assignment(corpus, annotator):
    return reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)


@pytest.mark.parametrize("url", [
    "/api/projects/?project=%00", "/api/documents/?project=alpha%00", "/api/summaries/?project=%00",
    "/api/keyfacts/?project=%00", "/api/hits/?task=f%00v", "/api/units/?hit=%00", "/api/assignments/?status=%00",
    "/api/labels/?project=%00", "/api/grades/?project=%00", "/api/hits/?%00=1",
])
def test_a_nul_in_a_query_parameter_of_the_api_is_a_400_with_a_message(corpus, manager, url):
    response = client_for(manager).get(url)
    assert response.status_code == 400, response.content[:300]
    assert "contains a NUL character" in response.json()["detail"]


def test_a_nul_in_the_address_is_a_400(corpus, manager):
    for url in ("/api/projects/al%00pha/", "/projects/alpha/hits/%00/", "/api/documents/1%00/"):
        response = client_for(manager).get(url)
        assert response.status_code == 400, (url, response.content[:300])
        assert "The address contains a NUL character" in response.content.decode()


def test_a_nul_in_a_page_parameter_is_a_400(corpus, manager):
    response = client_for(manager).get("/projects/alpha/hits/?task=fv%00")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    assert "The query parameter 'task' contains a NUL character" in response.content.decode()


def test_a_nul_in_a_form_field_is_refused_before_anything_is_written(assignment, annotator):
    # The plain form's submit stores `submission_key` as it comes: SQLite stored the NUL, PostgreSQL failed (500).
    units = list(assignment.hit.units.all())
    save_answers(assignment=assignment, answers={unit: answers_for(unit) for unit in units})
    response = client_for(annotator).post(f"/work/hits/{assignment.public_id}/submit/",
                                          {"submission_key": "key\x00"})
    assert response.status_code == 400
    assert "The form field 'submission_key' contains a NUL character" in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.RESERVED and assignment.submission_key == ""


def test_a_nul_in_a_cookie_is_a_400(corpus, annotator):
    # A quoted cookie value decodes octal escapes: the session key would reach the sessions table with a NUL.
    client = Client(raise_request_exception=False)
    response = client.get("/work/", HTTP_COOKIE='sessionid="\\000abcdefghijklmnop"')
    assert response.status_code == 400
    assert "The cookie 'sessionid' contains a NUL character" in response.content.decode()


def answer(client, assignment, body: str, **extra):
    return client.post(f"/api/assignments/{assignment.public_id}/answers/", body, content_type="application/json",
                       **extra)


@pytest.mark.parametrize("levels", [100_000, 900, 33])
def test_a_deeply_nested_answer_body_is_a_400(assignment, annotator, levels):
    body = '{"unit": "0", "error_types": ' + "[" * levels + "]" * levels + "}"
    response = answer(client_for(annotator), assignment, body)
    assert response.status_code == 400, response.content[:300]
    assert "nests deeper than 32 levels" in response.json()["detail"]
    assert not Label.objects.exists()


def test_a_body_nested_as_deep_as_allowed_is_answered_as_usual(assignment, annotator):
    body = json.dumps({"unit": "0", "error_types": json.loads("[" * 31 + "]" * 31)})
    response = answer(client_for(annotator), assignment, body)
    assert response.status_code == 400
    assert "Nothing was saved" in response.json()["detail"]  # the answer's own validation speaks


@pytest.mark.parametrize(("body", "message"), [
    ('{"unit": "0", "has_error": true, "\\ud800": 1}', "A key at the top contains a lone surrogate (U+D800)"),
    ('{"unit": "0\\u0000", "has_error": true}', "The value at unit contains a NUL character"),
    ('{"unit": "0", "error_types": ["entity", "\\udfff"]}',
     "The value at error_types[1] contains a lone surrogate (U+DFFF)"),
])
def test_unstorable_text_anywhere_in_a_json_body_is_a_400(assignment, annotator, body, message):
    response = answer(client_for(annotator), assignment, body)
    assert response.status_code == 400, response.content[:300]
    assert response.json()["detail"].startswith(message)
    assert not Label.objects.exists()


def test_a_json_body_larger_than_the_upload_limit_is_a_400(assignment, annotator, settings):
    # DRF reads a JSON body through request.body, which applies Django's DATA_UPLOAD_MAX_MEMORY_SIZE.
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps({"unit": "0", "has_error": False}) + " " * 1000
    response = answer(client_for(annotator), assignment, body)
    assert response.status_code == 400
    assert not Label.objects.exists()
    assert answer(client_for(annotator), assignment, body.strip()).status_code == 200


@pytest.mark.parametrize("unit", ["²", "١", "9" * 5000, "0" * 7])
def test_a_unit_that_only_looks_like_a_number_is_a_400(assignment, annotator, unit):
    response = answer(client_for(annotator), assignment, json.dumps({"unit": unit, "has_error": True}))
    assert response.status_code == 400, response.content[:300]
    assert response.json()["detail"] == "`unit` must be the position (0-based) or the id of an item of this HIT."
    assert not Label.objects.exists()


@pytest.mark.parametrize("action", ["answers", "submit", "return"])
def test_an_id_that_is_not_a_uuid_in_an_action_address_is_a_404(assignment, annotator, manager, action):
    # The router took any id; the action then filtered a UUID column with it and Django raised (500).
    for bad in ("not-a-uuid", "%ED%A0%80", "1"):
        response = client_for(annotator).post(f"/api/assignments/{bad}/{action}/", "{}",
                                              content_type="application/json")
        assert response.status_code == 404, (bad, response.content[:300])
    response = client_for(manager).post("/api/grades/not-a-uuid/override/", {"passed": True, "reason": "x"},
                                        content_type="application/json")
    assert response.status_code == 404
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.RESERVED
