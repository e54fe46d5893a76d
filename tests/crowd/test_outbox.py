"""The outbox: a transient failure is retried by the Celery task and succeeds later; an unconfirmed worker is
neither paid nor blocked; a worker the provider contradicts is flagged and never paid; sync_crowd from the CLI."""

from decimal import Decimal
from io import StringIO

import pytest
from botocore.stub import ANY
from celery.exceptions import Retry
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from annotation.crowd import outbox
from annotation.crowd.sync import sync_project
from annotation.models import Annotator, CrowdBatch, CrowdClaim, CrowdHit, Decision, LedgerEntry
from annotation.services.assignment import reserve_next_hit
from tests.crowd.stubs import assignment as remote
from tests.crowd.stubs import expect_add_place
from tests.work import qualify

pytestmark = pytest.mark.django_db
HIT = "3HIT" + "0" * 26


@pytest.fixture
def claim(corpus):
    batch = CrowdBatch.objects.create(project=corpus, task="fv", provider="mturk", sandbox=True, status="published",
                                      reward_usd=Decimal("0.40"), assignments_per_hit=3)
    hit = corpus.hits.filter(task="fv").order_by("position").first()
    CrowdHit.objects.create(batch=batch, hit=hit, request_token="t0", external_id=HIT, published_at=timezone.now())
    annotator = qualify(Annotator.objects.create(provider="mturk", external_id="A1WORKER"))
    from annotation.models import Assignment

    assignment = Assignment.objects.create(hit=hit, annotator=annotator, expires_at=timezone.now(),
                                           status="submitted", submitted_at=timezone.now())
    return CrowdClaim.objects.create(assignment=assignment, batch=batch, provider="mturk",
                                     external_assignment_id="3ASG1", external_hit_id=HIT, worker_id="A1WORKER")


def approve_decision(claim):
    return Decision.objects.create(project=claim.batch.project, annotator=claim.assignment.annotator,
                                   assignment=claim.assignment, kind="approve", idempotency_key="approve:test")


def test_an_unconfirmed_worker_is_not_paid(claim, mturk):
    provider, _ = mturk
    decision = approve_decision(claim)
    assert outbox.execute_decision(decision.pk, providers={("mturk", True): provider}) == "pending"
    assert Decision.objects.get(pk=decision.pk).attempts == 0


def test_a_service_fault_is_retried_by_the_task_until_it_succeeds(claim, mturk, monkeypatch):
    from annotation.crowd import tasks

    provider, stubber = mturk
    CrowdClaim.objects.filter(pk=claim.pk).update(verified=True)
    decision = approve_decision(claim)
    stubber.add_client_error("approve_assignment", service_error_code="ServiceFault", http_status_code=500)
    stubber.add_response("approve_assignment", {}, {"AssignmentId": "3ASG1", "RequesterFeedback": ANY})
    monkeypatch.setattr("annotation.crowd.outbox.get_provider", lambda name, sandbox=None: provider)
    with pytest.raises(Retry):  # the task asks Celery to run it again later, with a backoff
        tasks.execute_decision.apply(args=[decision.pk])
    decision.refresh_from_db()
    assert decision.status == "pending" and "ServiceFault" in decision.last_error
    tasks.execute_decision.apply(args=[decision.pk])  # the retry
    decision.refresh_from_db()
    assert decision.status == "done" and decision.attempts == 2
    assert LedgerEntry.objects.filter(decision=decision).count() == 2  # reward and fee, once


def test_a_contradicted_worker_is_flagged_and_never_paid(claim, mturk):
    provider, stubber = mturk
    decision = approve_decision(claim)
    stubber.add_response("list_assignments_for_hit", {"Assignments": [remote("3ASG1", HIT, "A9REALWORKER")]},
                         {"HITId": HIT, "MaxResults": 100, "AssignmentStatuses": ANY})
    result = sync_project(claim.batch.project, providers={("mturk", True): provider})
    assert any("A9REALWORKER" in flag for flag in result.flagged)
    decision.refresh_from_db()
    assert decision.status == "failed" and not LedgerEntry.objects.exists()


def test_an_assignment_mturk_shows_but_we_lack_is_flagged(claim, mturk):
    provider, stubber = mturk
    stubber.add_response("list_assignments_for_hit", {"Assignments": [
        remote("3ASG1", HIT, "A1WORKER", status="Approved"), remote("3ASG7", HIT, "A7STRANGER")]},
        {"HITId": HIT, "MaxResults": 100, "AssignmentStatuses": ANY})
    result = sync_project(claim.batch.project, providers={("mturk", True): provider})
    assert result.verified == 1 and any("3ASG7" in flag for flag in result.flagged)


def test_a_claim_lost_on_our_side_is_recovered(claim, mturk):
    provider, stubber = mturk
    assignment = claim.assignment
    claim.delete()
    stubber.add_response("list_assignments_for_hit", {"Assignments": [remote("3ASG1", HIT, "A1WORKER")]},
                         {"HITId": HIT, "MaxResults": 100, "AssignmentStatuses": ANY})
    # The assignment carries no answers, so its grade fails and the decision is a rejection.
    stubber.add_response("reject_assignment", {}, {"AssignmentId": "3ASG1", "RequesterFeedback": ANY})
    expect_add_place(stubber, HIT)
    result = sync_project(assignment.hit.project, providers={("mturk", True): provider})
    assert result.recovered == 1 and CrowdClaim.objects.get().assignment == assignment
    assert Decision.objects.get(kind="reject").status == "done"
    assert Decision.objects.get(kind="extend").status == "done"


def test_sync_crowd_refuses_an_unknown_project_and_reports(corpus):
    with pytest.raises(CommandError):
        call_command("sync_crowd", project="nope", stdout=StringIO())
    out = StringIO()
    call_command("sync_crowd", project=corpus.slug, stdout=out, stderr=StringIO())
    assert "Synced." in out.getvalue()


def test_reservations_the_provider_never_received_are_released(corpus):
    annotator = qualify(Annotator.objects.create(provider="mturk", external_id="A5GONE"))
    from annotation.models import Assignment

    hit = corpus.hits.filter(task="fv").first()
    Assignment.objects.create(hit=hit, annotator=annotator, expires_at=timezone.now())
    assert reserve_next_hit  # the pool logic is the annotation service's
    assert sync_project(corpus).released == 1
    assert Assignment.objects.get(annotator=annotator).status == "expired"


def test_a_decision_is_carried_out_only_while_what_it_rests_on_is_confirmed(claim, mturk):
    from annotation.models import Assignment

    provider, _ = mturk  # no response queued: any call to MTurk would fail the test
    providers = {("mturk", True): provider}
    Assignment.objects.filter(pk=claim.assignment_id).update(confirmed_at=None)  # MTurk has not confirmed it yet
    block = Decision.objects.create(project=claim.batch.project, annotator=claim.assignment.annotator, kind="block",
                                    idempotency_key="block:test", reason="Failed checks")
    block.rests_on.set([claim.assignment])
    assert outbox.execute_decision(block.pk, providers=providers) == "pending"
    assert Decision.objects.get(pk=block.pk).attempts == 0
    Assignment.objects.filter(pk=claim.assignment_id).update(status="discarded")  # MTurk does not know it
    assert outbox.execute_decision(block.pk, providers=providers) == "cancelled"
    assert "does not know" in Decision.objects.get(pk=block.pk).last_error
    assert claim.assignment.annotator.status_in(claim.batch.project) == "active"


def test_a_claim_the_provider_gives_to_another_worker_is_discarded_with_its_decisions(claim, mturk):
    from annotation.models import Assignment

    provider, stubber = mturk
    Assignment.objects.filter(pk=claim.assignment_id).update(confirmed_at=None)
    decision = approve_decision(claim)
    decision.rests_on.set([claim.assignment])
    stubber.add_response("list_assignments_for_hit", {"Assignments": [remote("3ASG1", HIT, "A9REALWORKER")]},
                         {"HITId": HIT, "MaxResults": 100, "AssignmentStatuses": ANY})
    result = sync_project(claim.batch.project, providers={("mturk", True): provider})
    assert result.discarded == ["3ASG1"] and any("A9REALWORKER" in flag for flag in result.flagged)
    assignment = Assignment.objects.get(pk=claim.assignment_id)
    assert assignment.status == "discarded" and "A9REALWORKER" in assignment.discarded_reason
    assert Decision.objects.get(pk=decision.pk).status == "cancelled" and not LedgerEntry.objects.exists()
