"""The worker's side: preview, accept, the token that replaces cookies and CSRF, and everything forged,
replayed, late or previewed being refused. Framing: only MTurk's origins may frame MTurk pages."""

from datetime import timedelta
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core import signing
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.crowd.tokens import SESSION_SALT
from annotation.models import Assignment, CrowdBatch, CrowdClaim, CrowdHit
from tests.crowd.conftest import form_for

pytestmark = pytest.mark.django_db
SANDBOX = "https://workersandbox.mturk.com"


@pytest.fixture
def batch(corpus):
    batch = CrowdBatch.objects.create(project=corpus, task="fv", provider="mturk", sandbox=True, status="published",
                                      reward_usd=Decimal("0.40"), assignments_per_hit=3)
    for n, hit in enumerate(corpus.hits.filter(task="fv").order_by("position")):
        CrowdHit.objects.create(batch=batch, hit=hit, request_token=f"token{n}", external_id=f"3HIT{n:026d}",
                                published_at=timezone.now())
    return batch


def entry(batch):
    return reverse("crowd_mturk_entry", args=[batch.public_id])


def accept(browser, batch, *, worker="A1WORKER", assignment="3ASG1", hit="3HIT" + "0" * 26, submit_to=SANDBOX):
    return browser.get(entry(batch), {"assignmentId": assignment, "hitId": hit, "workerId": worker,
                                      "turkSubmitTo": submit_to})


def token_of(response) -> str:
    return parse_qs(urlsplit(response["Location"]).query)["ct"][0]


def test_the_preview_shows_the_hit_and_reserves_nothing(batch):
    response = Client().get(entry(batch), {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE",
                                           "hitId": "3HIT" + "0" * 26})
    assert response.status_code == 200 and b"This is a preview" in response.content
    assert "frame-ancestors https://www.mturk.com https://workersandbox.mturk.com" in response[
        "Content-Security-Policy"]
    assert "X-Frame-Options" not in response
    assert not Assignment.objects.exists() and not CrowdClaim.objects.exists()


def test_a_preview_cannot_submit(batch):
    response = Client(enforce_csrf_checks=True).post(entry(batch), {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"})
    assert response.status_code in (403, 405) and not Assignment.objects.exists()


def test_accepting_binds_the_claim_to_a_signed_token(batch):
    response = accept(Client(), batch)
    assert response.status_code == 302
    claim = CrowdClaim.objects.get()
    assert (claim.worker_id, claim.external_assignment_id, claim.submit_to) == ("A1WORKER", "3ASG1", SANDBOX)
    data = signing.loads(token_of(response), salt=SESSION_SALT)
    assert data["a"] == str(claim.assignment.public_id) and not claim.verified
    # A claim until MTurk confirms it on sync: nothing counts yet, and no screening pass is recorded on its word.
    assert claim.assignment.confirmed_at is None
    assert claim.assignment.annotator.standing_in(batch.project).qualified_at is None


@pytest.mark.parametrize("change", [
    {"hit": "3HIT" + "9" * 26},                 # a HIT we never published
    {"submit_to": "https://evil.example.com"},  # not an MTurk origin
    {"submit_to": "http://www.mturk.com"},
    {"worker": "a1-lowercase"},                 # not an MTurk id
])
def test_it_refuses_claims_it_can_check(batch, change):
    response = accept(Client(), batch, **change)
    assert response.status_code == 403 and not Assignment.objects.exists()


def test_a_forged_worker_id_cannot_take_over_an_assignment(batch):
    accept(Client(), batch, worker="A1WORKER", assignment="3ASG1")
    response = accept(Client(), batch, worker="A2FORGER", assignment="3ASG1")
    assert response.status_code == 403
    assert CrowdClaim.objects.get().worker_id == "A1WORKER" and Assignment.objects.count() == 1


def test_a_post_without_the_token_is_refused(batch):
    response = accept(Client(), batch)
    assignment = Assignment.objects.get()
    forged = Client(enforce_csrf_checks=True).post(reverse("hit_submit", args=[assignment.public_id]),
                                                   form_for(assignment))
    assert forged.status_code == 403  # the CSRF check, since no crowd token replaced it
    tampered = Client(enforce_csrf_checks=True).post(reverse("hit_submit", args=[assignment.public_id]),
                                                     {**form_for(assignment), "crowd_token": token_of(response) + "x"})
    assert tampered.status_code == 403
    assert Assignment.objects.get().status == "reserved"


def test_a_token_works_only_for_its_own_assignment(batch):
    first = accept(Client(), batch, worker="A1WORKER", assignment="3ASG1")
    accept(Client(), batch, worker="A2WORKER", assignment="3ASG2")
    other = Assignment.objects.get(crowd_claim__external_assignment_id="3ASG2")
    response = Client(enforce_csrf_checks=True).post(reverse("hit_submit", args=[other.public_id]),
                                                     {**form_for(other), "crowd_token": token_of(first)})
    assert response.status_code == 403 and Assignment.objects.get(pk=other.pk).status == "reserved"


def test_htmx_saves_carry_the_token_in_a_header(batch):
    response = accept(Client(), batch)
    assignment = Assignment.objects.get()
    page = Client().get(response["Location"])
    assert b'"X-Finegrain-Session": "' in page.content and b'name="crowd_token"' in page.content
    unit = assignment.hit.units.order_by("position").first()
    saved = Client(enforce_csrf_checks=True).post(
        reverse("hit_answer", args=[assignment.public_id, unit.position]),
        {f"u{unit.position}-has_error": "no", f"u{unit.position}-ai_right": "yes"},
        HTTP_X_FINEGRAIN_SESSION=token_of(response), HTTP_HX_REQUEST="true")
    assert saved.status_code == 200 and assignment.labels.count() == 1


def test_a_replayed_submission_is_refused(batch):
    response = accept(Client(), batch)
    assignment, token = Assignment.objects.get(), token_of(response)
    url = reverse("hit_submit", args=[assignment.public_id])
    first = Client(enforce_csrf_checks=True).post(url, {**form_for(assignment), "crowd_token": token})
    assert first.status_code == 302 and reverse("crowd_done", args=[assignment.public_id]) in first["Location"]
    replay = Client(enforce_csrf_checks=True).post(url, {**form_for(assignment, passing=False), "crowd_token": token})
    assert replay.status_code == 409
    done = Client().get(first["Location"])
    assert b'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in done.content
    assert b'name="assignmentId" value="3ASG1"' in done.content


def test_a_submission_after_expiry_is_refused(batch):
    response = accept(Client(), batch)
    assignment = Assignment.objects.get()
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    late = Client(enforce_csrf_checks=True).post(reverse("hit_submit", args=[assignment.public_id]),
                                                 {**form_for(assignment), "crowd_token": token_of(response)})
    assert late.status_code == 410 and Assignment.objects.get().status == "reserved"


def test_an_expired_token_is_refused(batch, settings):
    response = accept(Client(), batch)
    settings.FINEGRAIN_CROWD_SESSION_HOURS = 0
    assignment = Assignment.objects.get()
    page = Client().get(response["Location"])
    assert page.status_code == 403 and assignment.labels.count() == 0


def test_pages_outside_mturk_cannot_be_framed(batch, manager, client):
    client.force_login(manager)
    response = client.get(reverse("crowd_manage", args=[batch.project.slug]))
    assert response.status_code == 200
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"


def test_account_work_keeps_its_csrf_cookie_and_no_framing(corpus, annotator):
    from annotation.services.assignment import reserve_next_hit
    from tests.work import annotator_for

    assignment = reserve_next_hit(annotator_for(annotator), corpus, "fv", confirmed=True)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(annotator)
    page = browser.get(reverse("hit_page", args=[assignment.public_id]))
    assert page["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in page["Content-Security-Policy"]
    refused = browser.post(reverse("hit_submit", args=[assignment.public_id]), form_for(assignment))
    assert refused.status_code == 403  # no CSRF token: refused as before
