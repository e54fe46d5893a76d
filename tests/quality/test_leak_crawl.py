"""Attention checks are undiscoverable through every door (paper 3.4, G.3), not only the HIT page.

tests/quality/leak_crawler.py requests every URL pattern of the URLconf and every GET operation of the API schema,
with parameters filled from what the annotator's own HITs involve (their summaries, documents, units, check units)
and from everything else of the project and of another project, as an annotator holding HITs with checks of all
three tasks (one FV HIT submitted, one returned), and again as a private-link worker. No response may be a 500 and
none may tell a check from a real unit (leak_crawler.Oracle). The tests of the test show that a leaky endpoint added
to the URLconf, or one whose leaking query parameter only the schema documents, is caught without being named.
"""

import re
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

import pytest
from django.apps import apps
from django.http import JsonResponse
from django.test import Client
from django.urls import path
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

import config.urls
from annotation.crowd.links import link_annotator, link_create, link_token
from annotation.crowd.tokens import sign_session
from annotation.models import Annotator, Assignment, AttentionCheck, CrowdBatch, CrowdHit, Hit, Task, Unit
from annotation.services.answers import save_answers
from annotation.services.assignment import return_assignment, submit_assignment
from corpus.models import Document, KeyFact, Project, Summary
from tests.quality.conftest import with_checks
from tests.quality.leak_crawler import Oracle, Pools, crawl, formats_of, leaf_patterns, oracle_for, route_of
from tests.work import add_assistance, annotator_for, answers_for, build_all, import_generated, import_small, qualify

pytestmark = pytest.mark.django_db
Kind = AttentionCheck.Kind


# --- The world: a project with HITs of every task and checks in all of them ----------------------------------------

def hold(annotator: Annotator, hit: Hit) -> Assignment:
    return Assignment.objects.create(hit=hit, annotator=annotator,
                                     expires_at=timezone.now() + timedelta(hours=2))


def passing_answers(unit: Unit) -> dict:
    """The answers a careful annotator gives: the checks' expected ones (they must not fail and get blocked)."""
    answers = answers_for(unit)
    check = AttentionCheck.objects.filter(unit=unit).first()
    if check is not None:
        answers.update({name: value for name, value in check.expected.items()
                        if name != "ai_right" or "ai_right" in answers})
        if answers.get("has_error"):
            answers["error_types"] = ["out_of_article"]
    return answers


def with_checks_in(hits) -> list[Hit]:
    return [hit for hit in hits if hit.units.filter(attention_check__isnull=False).exists()]


@dataclass
class World:
    project: Project
    other: Project
    user: object
    annotator: Annotator
    held: list[Assignment]
    returned: Assignment
    link_worker: Annotator
    link_session: str
    batches: list[CrowdBatch]


def texts_of(hit: Hit) -> set[str]:
    return {text for unit in hit.units.all() for text in (unit.text, unit.sentence_text) if text}


def apart(candidates: list[list[Hit]]) -> list[Hit]:
    """One HIT from each list, no two showing a same text: a text two HITs share is no evidence either way, and a
    world where it happens would test less (checks are drawn at random, so it can)."""
    def pick(chosen: list[Hit], rest: list[list[Hit]]):
        if not rest:
            return chosen
        shown = set().union(*(texts_of(hit) for hit in chosen)) if chosen else set()
        for hit in rest[0]:
            if hit not in chosen and not texts_of(hit) & shown and (found := pick([*chosen, hit], rest[1:])):
                return found
        return None

    return pick([], candidates)


@pytest.fixture
def world(project, other_project, annotator, other_annotator) -> World:
    import_small(project)
    import_generated(project, documents=6, summarizers=2, sentences=3)
    add_assistance(project)
    with_checks(project, 0.34)
    import_small(other_project)
    add_assistance(other_project)
    with_checks(other_project, 0.34)
    build_all(other_project)
    me = annotator_for(annotator)
    # Checks are drawn at random (seeded by each HIT's random public id): a draw where every choice of HITs shares a
    # text is built again, with new ids, rather than tested less.
    for _ in range(8):
        build_all(project)
        fv = with_checks_in(Hit.objects.filter(project=project, task="fv", document__uid__startswith="gen")
                            .order_by("position"))
        kv = with_checks_in(Hit.objects.filter(project=project, task="kv").order_by("position"))
        ka = with_checks_in(Hit.objects.filter(project=project, task="ka").order_by("position"))
        # FV and KA HITs of different documents: the same summary in both tasks is another matter (see the report).
        if found := apart([fv, fv, kv, ka, fv]):
            break
        Hit.objects.filter(project=project).delete()
    assert found, "every draw of checks had HITs sharing a text: make the corpus larger"
    reserved_fv, submitted_fv, kv_hit, ka_hit, link_fv = found
    held = [hold(me, reserved_fv), hold(me, kv_hit), hold(me, ka_hit)]
    submitted = hold(me, submitted_fv)
    save_answers(assignment=submitted, answers={unit: passing_answers(unit) for unit in submitted.hit.units.all()})
    submit_assignment(assignment=submitted)
    held.append(submitted)
    returned = return_assignment(assignment=hold(me, Hit.objects.filter(project=project, task="fv")
                                                 .exclude(pk__in=[a.hit_id for a in held]).first()))
    me.refresh_from_db()
    assert me.standing_in(project).may_work and submitted.grade.passed, \
        "the annotator must still be at work, its submission passed"
    hold(annotator_for(other_annotator), reserved_fv)
    link = link_create(project=project, task="fv", label="Expert 1")
    link_worker = qualify(link_annotator(link=link), project)
    # As claims.link_next binds a link holder's reservation, on a HIT of the test's choosing.
    link_session = sign_session(annotator=link_worker, project_id=project.pk, provider="link",
                                assignment=hold(link_worker, link_fv), link=link)
    batches = []
    for provider in ("mturk", "prolific"):
        batch = CrowdBatch.objects.create(project=project, task="fv", provider=provider, status="published",
                                          reward_usd=Decimal("0.40"), assignments_per_hit=3)
        for n, hit in enumerate(fv[:3]):
            CrowdHit.objects.create(batch=batch, hit=hit, request_token=f"{provider}{n}", external_id=f"X{n}",
                                    published_at=timezone.now())
        batches.append(batch)
    return World(project, other_project, annotator, me, held, returned, link_worker, link_session, batches)


# --- What the crawler fills parameters with, and what the oracle looks for ------------------------------------------

def pools_for(world: World, annotator: Annotator) -> Pools:
    """Real values, what matters most first: the annotator's own HITs, their units (checks included), then other
    annotators' work, the rest of the project and another project."""
    own = list(Assignment.objects.filter(annotator=annotator).select_related("hit").order_by("pk"))
    own_hits = [a.hit for a in own]
    own_units = Unit.objects.filter(hit__in=own_hits)
    checks_first = [*own_units.filter(attention_check__isnull=False).order_by("pk"),
                    *[own_units.filter(hit=hit, attention_check__isnull=True).order_by("position").first()
                      for hit in own_hits]]
    others = list(Assignment.objects.exclude(annotator=annotator).order_by("pk"))
    other_hits = list(Hit.objects.exclude(pk__in=[h.pk for h in own_hits]).order_by("project_id", "task", "position"))
    other_checks = list(Unit.objects.filter(attention_check__isnull=False).exclude(hit__in=own_hits).order_by("pk"))
    annotators = [annotator, *Annotator.objects.exclude(pk=annotator.pk).order_by("pk")]

    def ids(rows):
        return [str(row.public_id) for row in rows if row is not None]

    assignments = ids(own) + ids(others)
    hits = ids(own_hits) + ids(other_hits[:6])
    units = ids(checks_first) + ids(other_checks[:3])
    uuids = list(dict.fromkeys([*assignments[:8], *hits[:8], *units, *ids(annotators), *ids(world.batches),
                                *ids(world.project.private_links.all())]))
    summaries = [h.summary_id for h in own_hits if h.summary_id]
    documents = [h.document_id for h in own_hits]
    origins = list(AttentionCheck.objects.filter(unit__hit__in=own_hits).values_list("origin_document_id",
                                                                                     flat=True))
    ints = [str(pk) for pk in dict.fromkeys([
        *summaries, *documents, *[pk for pk in origins if pk],
        *Summary.objects.values_list("pk", flat=True), *Document.objects.values_list("pk", flat=True),
        *KeyFact.objects.values_list("pk", flat=True), 0, 999999])]
    slugs = [world.project.slug, world.other.slug]
    strings = [*slugs, "x", ".json", "json", *[app.label for app in apps.get_app_configs()],
               *[model._meta.model_name for model in apps.get_models()], "agreement", "benchmark.json"]
    return Pools(
        by_name={
            "slug": slugs, "pk": ints, "id": ints, "hit_id": hits, "hit": hits,
            "assignment_id": assignments, "assignment": assignments, "annotator_id": ids(annotators),
            "batch_id": ids(world.batches), "link_id": ids(world.project.private_links.all()),
            "public_id": list(dict.fromkeys([*assignments[:8], *hits[:8], *units])),
            "project": slugs, "task": Task.values, "format": ["json", ".json"], "position": ["0", "1", "2"],
            "status": [*Assignment.Status.values, *KeyFact.Status.values], "passed": ["true", "false"],
            "page": ["1", "2"], "token": [link_token(world.project.private_links.get()), "x"],
        },
        uuids=uuids, ints=ints, strings=strings)


def assert_clean(result, oracle: Oracle, label: str):
    assert not result.errors, f"{label}: server errors\n" + "\n".join(f"{u} {s} {b}" for u, s, b in result.errors)
    assert not result.leaks, f"{label}: leaks\n" + "\n".join(f"{u} ({s}): {w}" for u, s, w in result.leaks[:20])


# --- The crawls ---------------------------------------------------------------------------------------------------

def test_every_door_of_the_urlconf_and_the_schema_keeps_the_checks_of_an_annotators_hits(world):
    client = Client(raise_request_exception=False)
    client.force_login(world.user)
    oracle = oracle_for(world.annotator)
    result = crawl(client, pools_for(world, world.annotator), oracle)
    assert_clean(result, oracle, "annotator")
    # Every leaf pattern of the URLconf was requested, and every HIT the annotator may read was seen whole (the
    # oracle recognizes them: it could have seen a part).
    missing = [route_of(chain) for chain in leaf_patterns() if route_of(chain) not in result.requested]
    assert not missing, missing
    for hit in oracle.hits:
        assert hit.checks and hit.real, hit.name
        assert any(oracle.shows_whole(body, hit) for body in result.bodies.values()), hit.name
    # The annotator's own HIT pages and API answers were among the 2xx responses, not refused.
    ok = {url for urls in result.requested.values() for url, status in urls if status == 200}
    for assignment in world.held:
        assert f"/api/assignments/{assignment.public_id}/" in ok
        assert f"/api/hits/{assignment.hit.public_id}/" in ok
    assert f"/api/assignments/{world.returned.public_id}/" not in ok
    assert result.count > 500

    # A private-link worker (no account: its signed session token on every request) finds no door either.
    oracle = oracle_for(world.link_worker)
    result = crawl(Client(raise_request_exception=False), pools_for(world, world.link_worker), oracle,
                   extra_query={"ct": world.link_session})
    assert_clean(result, oracle, "link worker")
    (hit,) = oracle.hits
    assert any(oracle.shows_whole(body, hit) for body in result.bodies.values()), "its own HIT page was not seen"


def test_the_schema_documents_every_api_pattern_so_their_query_parameters_are_crawled(client, annotator):
    client.force_login(annotator)
    schema = client.get("/api/schema/", {"format": "json"}).json()
    documented = {re.sub(r"{\w+}", "X", path) for path in schema["paths"]}
    checked = 0
    for chain in leaf_patterns():
        route = route_of(chain)
        if not route.startswith("api/") or r"\.(?P<format>" in route or "<drf_format_suffix" in route:
            continue  # the format-suffix twins are the same operations
        if route in ("api/", "api/schema/", "api/docs/"):
            continue  # the API's root, the schema itself and its browsable page
        text = "".join(formats_of(pattern)[0][0] for pattern in chain)
        assert re.sub(r"%\(\w+\)s", "X", "/" + text) in documented, route
        checked += 1
    assert checked == len(documented) > 15


# --- Tests of the test: a leaky endpoint is caught without being named --------------------------------------------

def leaky_summary(request, pk):
    """A careless new endpoint: a summary's own sentence list."""
    summary = Summary.objects.filter(pk=pk).first()
    return JsonResponse({"sentences": list(summary.sentences.values_list("text", flat=True)) if summary else []})


def broken(request, pk):
    raise RuntimeError("a careless new endpoint that breaks")


class LeakyKeyFacts(APIView):
    """A careless new API operation whose leaking parameter only the schema documents."""

    @extend_schema(parameters=[OpenApiParameter("document", int)], responses={200: dict})
    def get(self, request):
        facts = KeyFact.objects.filter(document_id=request.query_params.get("document") or 0)
        return Response([{"text": fact.text, "status": fact.status} for fact in facts])


urlpatterns = [
    path("extra/summaries/<int:pk>/", leaky_summary),
    path("extra/broken/<int:pk>/", broken),
    path("api/extra/keyfacts/", LeakyKeyFacts.as_view()),
    *config.urls.urlpatterns,
]


@pytest.mark.urls(__name__)
def test_the_crawler_catches_leaky_endpoints_nobody_told_it_about(world):
    client = Client(raise_request_exception=False)
    client.force_login(world.user)
    oracle = oracle_for(world.annotator)
    result = crawl(client, pools_for(world, world.annotator), oracle)
    leaked = {url.split("?")[0] for url, _, _ in result.leaks}
    fv = world.held[0].hit
    # Its own FV HIT's summary, without the checks: the partial view the oracle is there for.
    assert f"/extra/summaries/{fv.summary_id}/" in leaked
    reasons = {w for url, _, what in result.leaks if url == f"/extra/summaries/{fv.summary_id}/" for w in what}
    assert any("real items and 0 of" in reason for reason in reasons), reasons
    # Found only through the schema's query parameter: requested bare, it shows nothing.
    assert "/api/extra/keyfacts/" in leaked
    assert any(url.startswith("/api/extra/keyfacts/?document=") for url, _, _ in result.leaks)
    assert not any(url == "/api/extra/keyfacts/" for url, _, _ in result.leaks)
    assert any(url.startswith("/extra/broken/") for url, _, _ in result.errors)
    # And nothing else leaks: the rest is the real URLconf.
    assert leaked <= {"/api/extra/keyfacts/"} | {u for u in leaked if u.startswith("/extra/summaries/")}
