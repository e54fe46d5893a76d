"""What an annotator may read (annotation.permissions): the corpus only as its own HITs show it, while it holds or
has submitted them. Set beside a HIT's units, a summary's own sentence list or a document's key-facts with their
status would tell exactly which units are attention checks; they are the managers'."""

import html
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import CrowdBatch, CrowdHit
from annotation.services.assignment import reserve_next_hit, return_assignment
from corpus.models import Document, KeyFact, Membership, Project, Summary
from tests.conftest import project_built_once
from tests.quality.conftest import build_checked
from tests.work import annotator_for, complete

pytestmark = pytest.mark.django_db


# Every test reads the same checked project: built once for the module, each test's writes rolled back.
checked_built = project_built_once(build_checked)


@pytest.fixture
def project(checked_built, db):
    return Project.objects.get(pk=checked_built)


@pytest.fixture
def checked(project):
    return project


def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def test_an_annotator_sees_its_hit_without_the_summary_the_documents_name_or_the_ablation(checked, annotator,
                                                                                          manager):
    hit = reserve_next_hit(annotator_for(annotator), checked, "fv", confirmed=True).hit
    mine = api(annotator).get(f"/api/hits/{hit.public_id}/").json()
    assert set(mine) == {"id", "project", "task", "position", "document", "assistance", "unit_count", "created"}
    assert mine["unit_count"] == hit.units.count()
    listed = api(annotator).get("/api/hits/").json()["results"]
    assert [set(row) for row in listed] == [set(mine)]
    managers = api(manager).get(f"/api/hits/{hit.public_id}/").json()
    assert managers["summary"] == hit.summary_id and managers["document_uid"] == hit.document.uid


def test_summaries_and_key_facts_are_the_managers(checked, annotator, manager):
    worker = annotator_for(annotator)
    fv = reserve_next_hit(worker, checked, "fv", confirmed=True).hit
    reserve_next_hit(worker, checked, "kv", confirmed=True)
    client = api(annotator)
    for url in ("/api/summaries/", f"/api/summaries/?project={checked.slug}", "/api/keyfacts/",
                f"/api/keyfacts/?project={checked.slug}"):
        assert client.get(url).json()["count"] == 0, url
    assert client.get(f"/api/summaries/{fv.summary_id}/").status_code == 404
    assert client.get(f"/api/keyfacts/{KeyFact.objects.first().pk}/").status_code == 404
    boss = api(manager)
    assert boss.get(f"/api/summaries/?project={checked.slug}").json()["count"] == Summary.objects.count()
    facts = boss.get(f"/api/keyfacts/?project={checked.slug}").json()["results"]
    assert len(facts) == KeyFact.objects.count() and {"status", "origin"} <= set(facts[0])


def test_an_annotator_reads_the_documents_of_its_own_hits_as_the_hit_page_shows_them(checked, annotator, manager):
    hit = reserve_next_hit(annotator_for(annotator), checked, "fv", confirmed=True).hit
    client = api(annotator)
    listed = client.get(f"/api/documents/?project={checked.slug}").json()
    assert listed["count"] == 1
    document = listed["results"][0]
    assert set(document) == {"id", "project", "sentences"} and document["id"] == hit.document_id
    assert [s["text"] for s in document["sentences"]] == list(
        hit.document.sentences.order_by("index").values_list("text", flat=True))
    assert client.get(f"/api/documents/{hit.document_id}/").json() == document
    other = Document.objects.exclude(pk=hit.document_id).get()
    assert client.get(f"/api/documents/{other.pk}/").status_code == 404
    full = api(manager).get(f"/api/documents/{hit.document_id}/").json()
    assert full["reference"] == hit.document.reference != "" and full["uid"] == hit.document.uid


def test_a_returned_hit_can_no_longer_be_read_a_submitted_one_can(checked, annotator):
    worker = annotator_for(annotator)
    returned = return_assignment(assignment=reserve_next_hit(worker, checked, "kv", confirmed=True))
    submitted = reserve_next_hit(worker, checked, "fv", confirmed=True)
    complete(submitted)
    client = api(annotator)
    assert client.get(f"/api/hits/{returned.hit.public_id}/").status_code == 404
    assert client.get(f"/api/assignments/{returned.public_id}/").status_code == 404
    assert client.get(f"/api/units/?hit={returned.hit.public_id}").json()["count"] == 0
    assert client.get(f"/api/hits/{submitted.hit.public_id}/").status_code == 200
    units = client.get(f"/api/units/?hit={submitted.hit.public_id}").json()
    assert units["count"] == submitted.hit.units.count()
    assert client.get("/api/labels/").json()["count"] == submitted.hit.units.count()
    shown = {d["id"] for d in client.get("/api/documents/").json()["results"]}
    assert shown == {submitted.hit.document_id}


def test_an_annotator_who_no_longer_works_in_the_project_reads_nothing_of_it(checked, annotator):
    assignment = reserve_next_hit(annotator_for(annotator), checked, "fv", confirmed=True)
    Membership.objects.filter(user=annotator, project=checked).delete()
    client = api(annotator)
    for url in ("/api/hits/", "/api/units/", "/api/assignments/", "/api/labels/", "/api/documents/"):
        assert client.get(url).json()["count"] == 0, url
    assert client.get(f"/api/assignments/{assignment.public_id}/").status_code == 404


def test_the_project_page_shows_an_annotator_its_own_work_and_not_the_corpus(checked, annotator, manager, client):
    assignment = reserve_next_hit(annotator_for(annotator), checked, "kv", confirmed=True)
    url = reverse("project_detail", args=[checked.slug])
    client.force_login(annotator)
    page = client.get(url).content.decode()
    assert reverse("hit_page", args=[assignment.public_id]) in page and "Key-fact validation" in page
    for uid in Document.objects.values_list("uid", flat=True):
        assert uid not in page
    assert "Summaries" not in page and "Key-facts" not in page
    listing = client.get(reverse("project_list")).content.decode()
    assert f'<td class="num">{Document.objects.count()}</td>' not in listing
    client.force_login(manager)
    page = client.get(url).content.decode()
    assert all(uid in page for uid in Document.objects.values_list("uid", flat=True))
    assert f'<td class="num">{Document.objects.count()}</td>' in client.get(reverse("project_list")).content.decode()


def test_an_mturk_preview_shows_the_task_and_the_hits_size_not_its_items(checked):
    batch = CrowdBatch.objects.create(project=checked, task="fv", provider="mturk", sandbox=True, status="published",
                                      reward_usd=Decimal("0.40"), assignments_per_hit=3)
    hit = checked.hits.filter(task="fv").order_by("position").first()
    CrowdHit.objects.create(batch=batch, hit=hit, request_token="t0", external_id="3HIT0",
                            published_at=timezone.now())
    page = Client().get(reverse("crowd_mturk_entry", args=[batch.public_id]),
                        {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "3HIT0"}).content.decode()
    assert "This is a preview" in page and f"{hit.units.count()} items to judge" in page
    for text in hit.units.values_list("text", flat=True):
        assert html.escape(text) not in page and text not in page


@pytest.mark.parametrize("standing", ["active", "paused", "blocked"])
def test_the_apis_quick_read_of_an_own_assignment_answers_exactly_as_the_general_rule(checked, annotator,
                                                                                      other_annotator, standing,
                                                                                      monkeypatch):
    """GET /api/assignments/<id>/ reads an annotator's own assignment through the HIT page's compiled read
    (annotation.permissions.readable_own_assignment); with that read switched off, every answer is the same."""
    from annotation import permissions
    from annotation.api import work
    from annotation.models import Assignment
    from tests.work import set_status

    worker, other = annotator_for(annotator), annotator_for(other_annotator)
    hits = list(checked.hits.order_by("pk")[:len(Assignment.Status.values)])
    assert len(hits) == len(Assignment.Status.values)
    mine = [Assignment.objects.create(hit=hit, annotator=worker, status=status,
                                      expires_at=timezone.now() + timezone.timedelta(hours=1))
            for hit, status in zip(hits, Assignment.Status.values, strict=True)]  # one in each status
    theirs = reserve_next_hit(other, checked, "fv", confirmed=True)
    set_status(worker, checked, standing)
    quick = []
    monkeypatch.setattr(work, "readable_own_assignment", lambda request, public_id: quick.append(
        found := permissions.readable_own_assignment(request, public_id)) or found)

    def answers() -> list:
        client = api(annotator)
        return [(response.status_code, response.json()) for response in (
            client.get(f"/api/assignments/{assignment.public_id}/") for assignment in [*mine, theirs])]

    with_quick_read = answers()
    monkeypatch.setattr(work, "readable_own_assignment", lambda request, public_id: None)
    assert with_quick_read == answers()
    found = [assignment for assignment in quick if assignment is not None]
    readable = [code for code, _ in with_quick_read].count(200)
    if standing == "active":  # held, lapsed and submitted: each read through the quick read
        assert readable == len(found) == 3
    else:
        assert readable == 0 and not found
