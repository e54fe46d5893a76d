"""API fuzzer: every operation of the app's OpenAPI schema (/api/schema/), called by a manager and by an annotator
with fuzzed path parameters, query parameters and bodies, on the real PostgreSQL (CI), which refuses what SQLite
accepts (NUL in a query or a row, a value longer than its column).

The rule checked: no answer is a 5xx, and a refused request (4xx) or a read (GET) writes nothing. Each example runs
in a savepoint rolled back afterwards, so that a successful `return` or `submit` does not end the fuzzing of the
assignment's other operations.
"""

import json
import uuid
from urllib.parse import quote, urlencode

import pytest
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from annotation.models import Assignment, Grade, Hit, Label, Unit
from annotation.services.assignment import reserve_next_hit
from corpus.models import Document, KeyFact, Summary

from ..work import add_assistance, annotator_for, build_all, crowd_annotator, import_small, work_through

pytestmark = [pytest.mark.services, pytest.mark.django_db]
EXAMPLES = 400
HYPOTHESIS = dict(deadline=None, database=None, derandomize=True,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                         HealthCheck.data_too_large, HealthCheck.large_base_example])
# The views read these beyond what the schema declares (`?project=slug&task=fv`...).
FILTERS = ["project", "task", "status", "hit", "assignment", "passed", "page"]
# Query and path values, already percent-encoded: NUL, a surrogate's bytes (invalid UTF-8), overlong UTF-8, numbers
# past any column, and ordinary values that make the filters match.
RAW_VALUES = ["%00", "a%00b", "alpha%00", "%ED%A0%80", "%ff", "%C0%80", "9" * 30, "-1", "0", "", "true", "false",
              "fv", "kv", "ka", "reserved", "submitted", "alpha", "beta", "%F0%9F%98%80", "1e309", "NaN", "%25",
              quote("x" * 300)]
DEEP = 100_000
UNSTORABLE = ["\x00", "\ud800", "\udfff", "x\x00y"]


def client_for(user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def operations(client) -> list[tuple[str, str, list[str]]]:
    """(method, path template, request body fields) of every operation the schema lists."""
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = schema["components"]["schemas"]
    found = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            fields = []
            content = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if content and "$ref" in content["schema"]:
                fields = sorted(components[content["schema"]["$ref"].rsplit("/", 1)[1]].get("properties", {}))
            found.append((method.upper(), path, fields))
    return found


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                         st.text(max_size=30), st.sampled_from([*UNSTORABLE, "x" * 3000, "0", "1", "entity", "fv",
                                                                 "alpha", "", "true"]))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.text(max_size=8), st.sampled_from(UNSTORABLE)),
                                                 inner, max_size=3)), max_leaves=6)


@st.composite
def bodies(draw, fields: list[str]) -> tuple[str, str]:
    """(content type, body): JSON objects of the operation's fields with fuzzed values, deep or broken JSON, forms."""
    names = st.sampled_from([*fields, "bogus"]) if fields else st.sampled_from(["bogus", "unit"])
    kind = draw(st.sampled_from(["object", "object", "any", "deep", "form", "text"]))
    if kind == "object":
        return "application/json", json.dumps(draw(st.dictionaries(names, json_values, max_size=5)))
    if kind == "any":
        return "application/json", json.dumps(draw(json_values))
    if kind == "deep":
        levels = draw(st.sampled_from([33, 900, DEEP]))
        return "application/json", f'{{"{draw(names)}": {"[" * levels + "]" * levels}}}'
    if kind == "form":  # a browser's form: no surrogates, but NUL and anything else
        values = st.one_of(st.text(max_size=20), st.sampled_from(["\x00", "a\x00", "0", "true", "alpha"]))
        return "application/x-www-form-urlencoded", urlencode(draw(st.dictionaries(names, values, max_size=4)))
    return "text/plain", draw(st.text(max_size=30))


@pytest.fixture
def targets(project, annotator, manager):
    """The ids each path parameter can take: the real ones (the annotator's open assignment, a graded one...)."""
    import_small(project)
    add_assistance(project)
    build_all(project)
    work_through(crowd_annotator("graded"), project, "kv")
    assignment = reserve_next_hit(annotator_for(annotator), project, "fv", confirmed=True)
    return {
        "assignments": str(assignment.public_id), "hits": str(assignment.hit.public_id),
        "units": str(assignment.hit.units.first().public_id), "projects": project.slug,
        "documents": str(Document.objects.first().pk), "summaries": str(Summary.objects.first().pk),
        "keyfacts": str(KeyFact.objects.first().pk), "grades": str(Grade.objects.get().assignment.public_id),
    }


def stored_state():
    """Everything an API write can touch."""
    return (
        list(Label.objects.order_by("pk").values_list("pk", "has_error", "error_types", "ai_right", "useful",
                                                      "aligned", "seconds_on_item")),
        list(Assignment.objects.order_by("pk").values_list("pk", "status", "submission_key", "expires_at")),
        list(Hit.objects.order_by("pk").values_list("pk", "assistance")),
        list(Grade.objects.order_by("pk").values_list("pk", "override_passed", "override_reason")),
        Unit.objects.count(), KeyFact.objects.filter(status=KeyFact.Status.CANDIDATE).count(),
    )


def test_every_api_operation_answers_fuzzed_requests_below_500_and_refusals_write_nothing(
        targets, annotator, manager, record_figures):
    clients = {"annotator": client_for(annotator), "manager": client_for(manager)}
    found = operations(clients["manager"])
    assert len(found) >= 20, found
    tried: dict[str, int] = {}
    statuses: dict[int, int] = {}
    failures = {"http_5xx": 0, "partial_writes": 0}

    @st.composite
    def requests(draw):
        method, template, fields = draw(st.sampled_from(found))
        resource = template.split("/")[2]
        path = template
        if "{" in template:
            value = draw(st.one_of(st.just(targets[resource]), st.sampled_from([*RAW_VALUES, str(uuid.uuid4()),
                                                                               *targets.values()])))
            path = template.split("{")[0] + value + "/" + template.split("}/", 1)[1]
        names = st.one_of(st.sampled_from(FILTERS), st.sampled_from(["%00", "a%00", "bogus"]))
        query = "&".join(f"{name}={value}" for name, value in draw(
            st.lists(st.tuples(names, st.sampled_from(RAW_VALUES)), max_size=3)))
        body = draw(bodies(fields)) if method == "POST" else None
        return draw(st.sampled_from(sorted(clients))), method, template, path + (f"?{query}" if query else ""), body

    @hsettings(max_examples=EXAMPLES, **HYPOTHESIS)
    @given(requests())
    def check(request):
        caller, method, template, url, body = request
        tried[f"{method} {template}"] = tried.get(f"{method} {template}", 0) + 1
        with transaction.atomic():
            before = stored_state()
            if method == "POST":
                response = clients[caller].post(url, body[1], content_type=body[0])
            else:
                response = clients[caller].generic(method, url)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            if response.status_code >= 500:
                failures["http_5xx"] += 1
                raise AssertionError((caller, method, url, body and body[1][:300], response.content[:300]))
            if (method == "GET" or response.status_code >= 400) and stored_state() != before:
                failures["partial_writes"] += 1
                raise AssertionError(("a refused request or a read wrote something", caller, method, url, body))
            if response.status_code >= 400:
                assert response.content.strip(), (method, url, response.status_code)
            transaction.set_rollback(True)

    try:
        check()
    finally:
        record_figures(inputs_tried=sum(tried.values()), operations=f"{len(tried)}/{len(found)}",
                       statuses={str(key): value for key, value in sorted(statuses.items())}, **failures)
    assert len(tried) == len(found), sorted({f"{m} {t}" for m, t, _ in found} - set(tried))
    assert statuses.get(200) and statuses.get(400) and statuses.get(404)
