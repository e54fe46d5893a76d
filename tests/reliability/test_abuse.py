"""Abuse: fuzzed imports and answer requests, XSS payloads in every user-supplied field, IDOR, CSRF, forged crowd
parameters. In-process (Django's test client, DRF's router, the real PostgreSQL): fast, and a 500 surfaces as a
response whose status the test checks instead of an exception (`raise_request_exception=False`)."""

import csv
import io
import json
import re
import uuid
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from annotation.models import Assignment, Label, Unit
from annotation.services.assignment import reserve_next_hit
from corpus.importing import KNOWN_FIELDS, MAX_LENGTHS, DatasetError, import_dataset
from corpus.models import Document, KeyFact, Membership, Project, Summary, SummarySentence

from ..work import add_assistance, annotator_for, build_all, complete, import_small, may_create_projects

pytestmark = [pytest.mark.services, pytest.mark.django_db, pytest.mark.usefixtures("numbers_worker")]
FUZZ_EXAMPLES = 200
HYPOTHESIS = dict(deadline=None, database=None, derandomize=True,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                         HealthCheck.data_too_large, HealthCheck.large_base_example])


def client_for(user, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf, raise_request_exception=False)
    client.force_login(user)
    return client


# --- Import fuzzer --------------------------------------------------------------------------------------------------

# Text the database cannot store (NUL; lone surrogates, which travel in JSON as "\ud800" escapes), JSON nested past
# Python's recursion limit, values one past their column's max_length: what SQLite accepts and PostgreSQL refuses.
UNSTORABLE = ["\x00", "\ud800", "\udfff", "\udbff"]
DEEP = [n * "[" + n * "]" for n in (40, 5_000, 100_000)]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=40),
    st.sampled_from(["", " ", "\x00", "\u202e", "😀" * 5, "<script>alert(1)</script>", "x" * 200_001,
                     "dialogue", "non-dialogue", "short", "long", "Speaker: hi.\nOther: yes.", *UNSTORABLE]),
)
values = st.one_of(scalars, st.lists(scalars, max_size=4), st.dictionaries(st.text(max_size=5), scalars, max_size=3))
field_names = st.one_of(st.sampled_from(sorted(KNOWN_FIELDS)), st.text(max_size=8), st.sampled_from(UNSTORABLE))


def good_row(n: int, uid: int = 0) -> dict:
    return {"uid": f"d{uid}", "doc_id": f"d{uid}", "source": "S", "domain": "news", "input_type": "non-dialogue",
            "model": f"m{n}", "document": f"Document {uid} says one thing. It says another.",
            "summary": "It says one thing.", "pred_keyfact": ["One thing."]}


@st.composite
def spoiled(draw, row: dict) -> dict:
    """The row with one field made unstorable, one past its column, or nested deeply: every other field is good."""
    name = draw(st.sampled_from(sorted(row)))
    how = draw(st.sampled_from(["unstorable", "too long", "nested"]))
    if how == "too long" and name in MAX_LENGTHS:
        row[name] = "x" * (MAX_LENGTHS[name] + draw(st.integers(0, 1)))
    elif how == "nested":
        row[name] = json.loads(DEEP[0])
    elif isinstance(row[name], list):
        row[name] = [*row[name], "item " + draw(st.sampled_from(UNSTORABLE))]
    else:
        cut = draw(st.integers(0, len(row[name])))
        row[name] = row[name][:cut] + draw(st.sampled_from(UNSTORABLE)) + row[name][cut:]
    return row


@st.composite
def dataset_files(draw):
    rows = []
    first_uid = draw(st.integers(0, 30))
    for n in range(draw(st.integers(0, 4))):
        row = good_row(n, first_uid + n % 2) if draw(st.booleans()) else {}
        if row and draw(st.booleans()):
            row = draw(spoiled(row))
        if draw(st.integers(0, 3)) == 0:
            row.update(draw(st.dictionaries(field_names, values, max_size=6)))
        rows.append(row)
    fmt = draw(st.sampled_from(["jsonl", "csv"]))
    if fmt == "jsonl":
        lines = [json.dumps(row, ensure_ascii=draw(st.booleans())) for row in rows]
        lines += draw(st.lists(st.sampled_from(["{", "[1, 2]", "null", '"text"', "{\"uid\": }", *DEEP,
                                                '{"uid": ' + DEEP[-1] + "}"]), max_size=2))
        # A lone surrogate written raw (not as an escape) is invalid UTF-8: refused as such.
        data = "\n".join(lines).encode("utf-8", "surrogatepass")
    else:
        header = sorted({key for row in rows for key in row} | set(draw(st.lists(field_names, max_size=3))))
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(header)
        for row in rows:
            writer.writerow([json.dumps(row[key]) if isinstance(row.get(key), (list, dict)) else row.get(key, "")
                             for key in header])
        data = buffer.getvalue().encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 2)) == 0:  # broken UTF-8, truncated multi-byte sequences, a BOM, NULs
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.sampled_from([b"\xff\xfe", b"\xc3", b"\xe2\x82", b"\xef\xbb\xbf", b"\x00",
                                                  b"\r", b'"'])) + data[cut:]
    return data, f"fuzz.{fmt}"


# What a refusal was about, by the words of its messages: the fuzzer must reach each of these doors.
REFUSAL_KINDS = {"NUL": "NUL character", "lone surrogate": "lone surrogate", "too long": "; the limit is",
                 "nested": "nested too deeply", "invalid UTF-8": "invalid UTF-8"}


def test_it_imports_fuzzed_files_or_refuses_them_with_messages_and_writes_nothing(record_figures):
    project = Project.objects.create(slug="fuzz-import", name="Fuzz import")
    outcomes = {"imported": 0, "refused": 0, "tried": 0, "other_exceptions": 0, "partial_writes": 0}
    refusals = dict.fromkeys(REFUSAL_KINDS, 0)

    def counts():
        return (Document.objects.filter(project=project).count(),
                Summary.objects.filter(document__project=project).count(),
                KeyFact.objects.filter(document__project=project).count(),
                SummarySentence.objects.filter(summary__document__project=project).count())

    @hsettings(max_examples=FUZZ_EXAMPLES, **HYPOTHESIS)
    @given(dataset_files())
    def check(file):
        data, filename = file
        outcomes["tried"] += 1
        before = counts()
        try:
            import_dataset(project=project, data=data, filename=filename)
        except DatasetError as error:
            outcomes["refused"] += 1
            messages = [str(problem) for problem in error.errors]
            assert messages and all(message.strip() for message in messages), error
            # Every message can be shown: a page, a terminal and a log all encode it as UTF-8.
            assert all(message.encode("utf-8") for message in messages)
            for kind, words in REFUSAL_KINDS.items():
                refusals[kind] += any(words in message for message in messages)
            if counts() != before:
                outcomes["partial_writes"] += 1
                raise AssertionError("a refused import wrote something")  # noqa: B904 (counted below)
        except Exception:
            outcomes["other_exceptions"] += 1  # a 500 on the upload page
            raise
        else:
            outcomes["imported"] += 1

    try:
        check()
    finally:
        record_figures(inputs_tried=outcomes["tried"], imported=outcomes["imported"], refused=outcomes["refused"],
                       other_exceptions=outcomes["other_exceptions"], partial_writes=outcomes["partial_writes"],
                       refusals=refusals)
    assert outcomes["refused"] > 0 and outcomes["imported"] > 0
    assert all(refusals.values()), refusals


# --- Answer endpoint fuzzer -------------------------------------------------------------------------------------------

@pytest.fixture
def corpus(project):
    import_small(project)
    add_assistance(project)
    build_all(project)
    return project


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False), st.text(max_size=30),
              st.sampled_from(["yes", "no", "true", "1", "entity", "out_of_article", "1e309", "-1", "NaN"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6)


def schema_fields(client) -> dict[str, list[str]]:
    """The request fields of the answer, submit and reserve operations, as the app's OpenAPI schema states them."""
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = schema["components"]["schemas"]
    fields = {}
    for path, operation in (("/api/assignments/{public_id}/answers/", "answers"),
                            ("/api/assignments/{public_id}/submit/", "submit"),
                            ("/api/assignments/reserve/", "reserve")):
        ref = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        fields[operation] = sorted(components[ref.rsplit("/", 1)[1]]["properties"])
    return fields


def test_the_answer_endpoints_answer_fuzzed_requests_with_4xx_and_clear_messages_never_500(
        corpus, annotator, record_figures):
    client = client_for(annotator)
    fields = schema_fields(client)
    assert {"unit", "has_error", "error_types", "ai_right", "useful", "aligned"} <= set(fields["answers"])
    assignment = reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)
    url = f"/api/assignments/{assignment.public_id}"
    statuses: dict[int, int] = {}
    partial_writes: list = []

    def labels():
        return sorted(Label.objects.filter(assignment=assignment).values_list(
            "unit_id", "has_error", "error_types", "ai_right", "seconds_on_item"))

    near_valid = st.fixed_dictionaries(
        {"unit": st.sampled_from(["0", "1", "2", "99", "-1", "x", str(uuid.uuid4())])},
        optional={"has_error": st.sampled_from([True, False, "true", "no", None, 2]),
                  "ai_right": st.sampled_from([True, False, "maybe"]),
                  "error_types": st.lists(st.sampled_from(["entity", "relation", "sentence", "out_of_article",
                                                           "bogus", ""]), max_size=3),
                  "seconds_on_item": st.one_of(st.floats(allow_nan=False), st.integers(-10, 10**9)),
                  "useful": st.booleans()})
    bodies = st.one_of(
        near_valid,
        st.dictionaries(st.sampled_from([*fields["answers"], "bogus"]), json_values, max_size=5),
        json_values)
    targets = st.sampled_from([("answers", f"{url}/answers/"), ("submit", f"{url}/submit/"),
                               ("reserve", "/api/assignments/reserve/")])

    @hsettings(max_examples=FUZZ_EXAMPLES, **HYPOTHESIS)
    @given(targets, bodies, st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded"]))
    def check(target, body, content_type):
        operation, path = target
        before = labels()
        payload = json.dumps(body) if content_type != "application/x-www-form-urlencoded" else "a=%ff&b"
        response = client.post(path, payload, content_type=content_type)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code < 500, (operation, body, response.content[:500])
        if response.status_code >= 400:
            text = response.content.decode()
            assert len(text) > 10 and ("detail" in text or re.search(r'"\w+":\s*\[', text)), text
            if labels() != before:
                partial_writes.append(body)
                raise AssertionError("a refused request changed labels")
        if operation == "submit" and response.status_code == 200:
            raise AssertionError("the HIT was submitted without every answer")

    def figures():
        record_figures(inputs_tried=sum(statuses.values()), statuses={str(k): v for k, v in sorted(statuses.items())},
                       http_5xx=sum(n for status, n in statuses.items() if status >= 500),
                       partial_writes=len(partial_writes))

    try:
        check()
    finally:
        figures()
    # After the fuzzing the endpoint still takes a well-formed answer (and stores exactly that).
    valid = client.post(f"{url}/answers/", {"unit": "0", "has_error": True, "error_types": ["entity"], "ai_right":
                                            False}, content_type="application/json")
    statuses[valid.status_code] = statuses.get(valid.status_code, 0) + 1
    figures()
    assert valid.status_code == 200, valid.content[:300]
    assert Label.objects.filter(assignment=assignment, unit__position=0, has_error=True).count() == 1
    assert 400 in statuses


# --- XSS ---------------------------------------------------------------------------------------------------------------

PAYLOADS = ['<script>alert(1)</script>', '"><img src=x onerror=alert(2)>', '</textarea><svg onload=alert(3)>']
PAYLOAD = "".join(PAYLOADS)
DANGEROUS = ["<script>alert(1)", "<img src=x onerror", "<svg onload"]


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "hx-get") and value:
                self.links.append(value)


def crawl(client, start: list[str], limit: int = 250) -> dict[str, int]:
    """GET every same-site page reachable from `start` (bounded); returns url -> status."""
    seen: dict[str, int] = {}
    queue = list(start)
    while queue and len(seen) < limit:
        url = queue.pop(0)
        path = urlsplit(url).path
        if path in seen or not path.startswith("/") or path.startswith(("/static/", "/admin/", "/accounts/logout")):
            continue
        response = client.get(url)
        seen[path] = response.status_code
        assert response.status_code < 500, (url, response.content[:300])
        if response.status_code in (301, 302):
            queue.append(response["Location"])
            continue
        if "html" not in response.get("Content-Type", ""):
            continue
        body = response.content.decode()
        for marker in DANGEROUS:
            assert marker not in body, f"{url} renders {marker!r} unescaped"
        parser = Links()
        parser.feed(body)
        queue += [urljoin(url, link) for link in parser.links if not link.startswith(("http", "//", "#", "mailto"))]
    return seen


def test_xss_payloads_in_every_user_supplied_field_render_escaped_on_every_page(
        django_user_model, record_figures):
    project = Project.objects.create(slug="xss", name=PAYLOAD, description=PAYLOAD, annotators_per_unit=1,
                                     attention_check_rate=0.0)
    manager = may_create_projects(django_user_model.objects.create_user("xss-manager", password="pw-xss-1"))
    worker = django_user_model.objects.create_user("xss-annotator", password="pw-xss-2")
    Membership.objects.create(project=project, user=manager, role="manager")
    Membership.objects.create(project=project, user=worker, role="annotator")
    row = {"uid": PAYLOAD, "doc_id": PAYLOAD, "source": PAYLOAD, "domain": PAYLOAD, "input_type": "non-dialogue",
           "model": PAYLOAD, "document": f"First {PAYLOAD} sentence here. Second sentence {PAYLOAD} there.",
           "summary": f"Summary says {PAYLOAD}. Another {PAYLOAD} claim.", "reference": PAYLOAD,
           "pred_keyfact": [f"Key-fact {PAYLOAD}.", f"Second key-fact {PAYLOAD}."]}
    import_dataset(project=project, data=json.dumps(row).encode(), filename="xss.jsonl")
    add_assistance(project)
    from assist.models import PreLabel
    PreLabel.objects.update(reason=f"Because {PAYLOAD}", category="entity")
    build_all(project)
    Unit.objects.filter(hit__project=project, task="fv").update(ai_reason=f"Because {PAYLOAD}", ai_category="entity")
    ann = annotator_for(worker)
    kv = reserve_next_hit(ann, project, "kv", confirmed=True)
    complete(kv, yes=True)  # KV settled: KA HITs exist
    held = [reserve_next_hit(ann, project, task, confirmed=True) for task in ("fv", "ka")]

    manager_pages = crawl(client_for(manager), ["/", f"/projects/{project.slug}/"])
    annotator_pages = crawl(client_for(worker), ["/work/", *[f"/work/hits/{a.public_id}/" for a in held if a]])
    record_figures(payloads=len(PAYLOADS), manager_pages=len(manager_pages), annotator_pages=len(annotator_pages),
                   unescaped_found=0)
    assert all(held), "no FV or KA HIT to render"
    assert len(manager_pages) > 10 and len(annotator_pages) >= 3, (manager_pages, annotator_pages)


# --- IDOR and CSRF ---------------------------------------------------------------------------------------------------

def test_other_annotators_and_projects_work_is_refused_and_never_leaked(
        corpus, annotator, other_annotator, outsider, record_figures):
    mine = reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)
    unit = mine.hit.units.order_by("position").first()
    from annotation.services.answers import save_answers

    from ..work import answers_for
    save_answers(assignment=mine, answers={unit: answers_for(unit)})
    label = Label.objects.get(assignment=mine)
    secret_ids = [str(mine.public_id), str(mine.hit.public_id), str(unit.public_id)]
    before = list(Label.objects.values_list("pk", "has_error", "updated_at"))
    attempts, refused, leaks = 0, 0, []
    a = str(mine.public_id)
    guessed = str(uuid.uuid4())
    page_posts = [f"/work/hits/{a}/answers/0/", f"/work/hits/{a}/submit/", f"/work/hits/{a}/return/"]
    api_posts = [f"/api/assignments/{a}/answers/", f"/api/assignments/{a}/submit/", f"/api/assignments/{a}/return/"]
    gets = [f"/work/hits/{a}/", f"/api/assignments/{a}/", f"/api/hits/{mine.hit.public_id}/",
            f"/api/units/{unit.public_id}/", f"/work/hits/{guessed}/", f"/api/assignments/{guessed}/",
            f"/crowd/done/{a}/"]
    lists = [f"/api/labels/?assignment={a}", f"/api/labels/?hit={mine.hit.public_id}", "/api/labels/",
             "/api/assignments/", f"/api/units/?hit={mine.hit.public_id}", "/api/hits/"]
    manager_only = [f"/projects/{corpus.slug}/", f"/projects/{corpus.slug}/progress/",
                    f"/projects/{corpus.slug}/hits/{mine.hit.public_id}/", f"/projects/{corpus.slug}/annotators/",
                    f"/projects/{corpus.slug}/quality/", f"/projects/{corpus.slug}/crowd/",
                    f"/api/projects/{corpus.slug}/", f"/projects/beta/hits/{mine.hit.public_id}/"]
    # The other annotator is a member of the same project (they may see the project's page, which lists their own
    # HITs): only the first annotator's own work is off limits. The outsider manages another project.
    for user, paths in ((other_annotator, gets + manager_only[1:6] + manager_only[7:]), (outsider, gets + manager_only)):
        client = client_for(user)
        for path in paths:
            attempts += 1
            response = client.get(path)
            if response.status_code in (403, 404) or (response.status_code == 302 and "login" in response["Location"]):
                refused += 1
            else:
                leaks.append((user.username, path, response.status_code))
        for path in lists + ([f"/api/documents/?project={corpus.slug}"] if user == outsider else []):
            attempts += 1
            body = client.get(path).content.decode()
            if any(secret in body for secret in secret_ids) or (user == outsider and any(
                    f'"{uid}"' in body for uid in Document.objects.values_list("uid", flat=True))):
                leaks.append((user.username, path, "lists another annotator's work"))
            else:
                refused += 1
        for path in page_posts + api_posts:
            attempts += 1
            response = client.post(path, {"unit": "0", "has_error": "false", "u0-has_error": "no"})
            if response.status_code in (403, 404):
                refused += 1
            else:
                leaks.append((user.username, path, response.status_code))
    record_figures(attempts=attempts, refused=refused, leaks=len(leaks))
    assert not leaks, leaks
    assert list(Label.objects.values_list("pk", "has_error", "updated_at")) == before
    assert Assignment.objects.get(pk=mine.pk).status == "reserved" and label.pk


def test_a_cookie_session_post_without_csrf_token_is_refused(corpus, annotator, record_figures):
    assignment = reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)
    client = client_for(annotator, csrf=True)
    attempts = [
        client.post(f"/work/hits/{assignment.public_id}/answers/0/", {"u0-has_error": "no"}),
        client.post(f"/work/hits/{assignment.public_id}/submit/", {"u0-has_error": "no"}),
        client.post(f"/api/assignments/{assignment.public_id}/answers/", {"unit": "0", "has_error": False},
                    content_type="application/json"),
        client.post("/api/assignments/reserve/", {"project": corpus.slug, "task": "kv"},
                    content_type="application/json"),
        client.post(f"/projects/{corpus.slug}/hits/build/", {}),
    ]
    record_figures(attempts=len(attempts), refused=sum(r.status_code == 403 for r in attempts))
    assert [r.status_code for r in attempts] == [403] * len(attempts)
    assert not Label.objects.exists()
    assert Assignment.objects.count() == 1


@pytest.mark.parametrize("body", ["null", "[]", "[1, 2]", '"text"', "3", "true"])
def test_an_answer_body_that_is_not_a_json_object_is_a_400_not_a_500(corpus, annotator, body):
    # Found by the fuzzer above: `null`, a list or a string made AssignmentViewSet.answers raise (500).
    assignment = reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)
    response = client_for(annotator).post(f"/api/assignments/{assignment.public_id}/answers/", body,
                                          content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "JSON object" in response.json()["detail"]
    assert not Label.objects.exists()
