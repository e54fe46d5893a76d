"""The requests annotators send most, pinned to the SQL they run: the HIT page, saving one answer, and the same
two through the API. Each statement is named by its verb and its first table, so that a new query (or a lost
join that turns into one per item) fails here with the list of what ran. Transaction control (savepoints, BEGIN,
COMMIT) and the session row (read from the database or from the cache, as configured) are left out: they
differ between databases and set-ups, not between versions of this code."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.services.assignment import reserve_next_hit
from tests.work import annotator_for

pytestmark = pytest.mark.django_db

# A SELECT is named by the table of its first column (its subqueries come later), a write by its target.
TABLE = re.compile(r'^(?:(SELECT) (?:DISTINCT )?"(\w+)"\.|(INSERT) INTO "(\w+)"|(UPDATE) "(\w+)"|(DELETE) FROM "(\w+)")')
CONTROL = re.compile(r"^(SAVEPOINT|RELEASE SAVEPOINT|ROLLBACK|BEGIN|COMMIT)\b")

# Who asks (the log-in with its annotator, one query), the assignment with its HIT, its project and whether the
# annotator still works there (one query), then the page's units, labels and flags.
PAGE = [("SELECT", "auth_user"), ("SELECT", "annotation_assignment"),
        ("SELECT", "annotation_unit"), ("SELECT", "annotation_label"), ("SELECT", "annotation_itemflag")]
# Who asks, the assignment (as above), the item; then, in one transaction, the assignment's lock, the item's label
# and its write.
ANSWER = [("SELECT", "auth_user"), ("SELECT", "annotation_assignment"),
          ("SELECT", "annotation_unit"), ("SELECT", "annotation_assignment"), ("SELECT", "annotation_label")]


def statements(queries) -> list[tuple[str, str]]:
    found = []
    for query in queries.captured_queries:
        sql = query["sql"].strip()
        if CONTROL.match(sql) or '"django_session"' in sql:
            continue
        match = TABLE.match(sql)
        found.append(tuple(group for group in match.groups() if group) if match else (sql[:60], ""))
    return found


@pytest.fixture
def fv_assignment(corpus, annotator):
    return reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)


def test_the_hit_page_runs_five_statements(client, fv_assignment, annotator):
    client.force_login(annotator)
    client.post(reverse("hit_answer", args=[fv_assignment.public_id, 0]), {"u0-has_error": "no"})
    client.get(reverse("hit_page", args=[fv_assignment.public_id]))  # anything done once per process
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("hit_page", args=[fv_assignment.public_id]))
    assert response.status_code == 200
    assert statements(queries) == PAGE


def test_saving_an_answer_runs_six_statements(client, fv_assignment, annotator):
    client.force_login(annotator)
    url = reverse("hit_answer", args=[fv_assignment.public_id, 0])
    with CaptureQueriesContext(connection) as queries:
        assert client.post(url, {"u0-has_error": "yes"}).status_code == 200
    assert statements(queries) == [*ANSWER, ("INSERT", "annotation_label")]
    with CaptureQueriesContext(connection) as queries:
        assert client.post(url, {"u0-has_error": "no"}).status_code == 200
    assert statements(queries) == [*ANSWER, ("UPDATE", "annotation_label")]


def test_the_api_runs_as_few_statements_as_the_pages(fv_assignment, annotator):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=annotator).key}")
    base = f"/api/assignments/{fv_assignment.public_id}/"
    with CaptureQueriesContext(connection) as queries:
        response = api.post(f"{base}answers/", {"unit": "0", "has_error": False}, format="json")
    assert response.status_code == 200, response.content
    assert statements(queries) == [("SELECT", "authtoken_token"), *ANSWER[1:], ("INSERT", "annotation_label")]
    with CaptureQueriesContext(connection) as queries:
        response = api.get(base)
    assert response.status_code == 200 and response.json()["labels"][0]["has_error"] is False
    # The token with its user and the user's annotator, the assignment with its project and the annotator's
    # standing there (the HIT page's read), its units, its labels.
    assert statements(queries) == [("SELECT", "authtoken_token"), ("SELECT", "annotation_assignment"),
                                   ("SELECT", "annotation_unit"), ("SELECT", "annotation_label")]
