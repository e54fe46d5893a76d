"""A manager reactivates a blocked crowd worker: an unblock decision (who, why) lifts the provider-side block once,
after the block itself; a later block gets a key of its own and is carried out again (paper G.3)."""

import random

import pytest
from botocore.stub import ANY, Stubber

from annotation.crowd import outbox
from annotation.crowd.mturk import MTurkProvider
from annotation.models import Annotator, Decision, ProviderResource
from annotation.quality.policy import annotator_set_status
from annotation.services.answers import save_answers
from annotation.services.assignment import reserve_next_hit, submit_assignment
from corpus.models import Membership
from tests.quality import scripted
from tests.quality.scripted import contrary
from tests.work import annotator_for, qualify, status_of

pytestmark = pytest.mark.django_db
WORKER = "A3WORKERSLOPPY"
BLOCK_QUALIFICATION = "3BLOCKQUALIFICATIONTYPE00001"


@pytest.fixture
def mturk(monkeypatch):
    """A real boto3 `mturk` client under botocore's Stubber (no network), as in tests/crowd."""
    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    client = boto3.client("mturk", region_name="us-east-1",
                          endpoint_url="https://mturk-requester-sandbox.us-east-1.amazonaws.com")
    # No provider assignment is recorded for a block: the outbox asks for the provider without a sandbox flag.
    provider = MTurkProvider(sandbox=True, client=client)
    ProviderResource.objects.create(provider="mturk", sandbox=True, key="block_qualification:big",
                                    external_id=BLOCK_QUALIFICATION)
    with Stubber(client) as stubber:
        yield {("mturk", None): provider}, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def project(big_project):
    big_project.block_after_failures = 2
    big_project.save(update_fields=["block_after_failures"])
    return big_project


@pytest.fixture
def worker(project):
    return qualify(Annotator.objects.create(provider=Annotator.Provider.MTURK, external_id=WORKER), project)


@pytest.fixture
def boss(project, django_user_model):
    user = django_user_model.objects.create_user("boss", password="pw-boss-1")
    Membership.objects.create(project=project, user=user, role=Membership.Role.MANAGER)
    return user


def fail(annotator, project, times: int) -> None:
    for _ in range(times):
        assignment = reserve_next_hit(annotator, project, "fv", confirmed=True)
        save_answers(assignment=assignment, answers=scripted.answers(assignment, contrary, random.Random(0)))
        submit_assignment(assignment=assignment)


def expect_block(stubber) -> None:
    # The project's own qualification only: CreateWorkerBlock would keep the worker from every project's HITs.
    stubber.add_response("associate_qualification_with_worker", {}, {
        "QualificationTypeId": BLOCK_QUALIFICATION, "WorkerId": WORKER, "IntegerValue": 1,
        "SendNotification": False})


def expect_unblock(stubber, reason) -> None:
    stubber.add_response("disassociate_qualification_from_worker", {}, {
        "QualificationTypeId": BLOCK_QUALIFICATION, "WorkerId": WORKER, "Reason": reason})


def reactivate(client, project, annotator, reason):
    url = f"/projects/{project.slug}/quality/annotators/{annotator.public_id}/status/"
    return client.post(url, {"status": "active", "reason": reason})


def test_reactivation_lifts_the_block_once_and_a_later_block_is_carried_out_again(project, worker, boss, client,
                                                                                  mturk):
    providers, stubber = mturk
    fail(worker, project, 2)
    assert status_of(worker, project) == Annotator.Status.BLOCKED
    block = Decision.objects.get(idempotency_key=f"block:{worker.public_id}:{project.slug}")
    expect_block(stubber)
    assert outbox.execute_decision(block.pk, providers=providers) == "done"

    client.force_login(boss)
    reason = "Appealed: the two checks were ambiguous."
    assert reactivate(client, project, worker, reason).status_code == 302
    assert reactivate(client, project, worker, reason).status_code == 302  # a resent form changes nothing
    unblock = Decision.objects.get(kind=Decision.Kind.UNBLOCK)
    assert unblock.idempotency_key == f"unblock:{worker.public_id}:{project.slug}:1"
    assert (unblock.annotator, unblock.project, unblock.created_by, unblock.reason) == (worker, project, boss, reason)
    assert status_of(worker, project) == Annotator.Status.ACTIVE

    expect_unblock(stubber, reason)
    assert outbox.execute_decision(unblock.pk, providers=providers) == "done"
    assert outbox.execute_decision(unblock.pk, providers=providers) == "done"  # carried out once: no second call
    assert Decision.objects.get(pk=unblock.pk).attempts == 1

    # Afresh after the unblock: one failure does not block again; the second one does, with a new key.
    fail(worker, project, 1)
    assert status_of(worker, project) == Annotator.Status.ACTIVE
    fail(worker, project, 1)
    assert status_of(worker, project) == Annotator.Status.BLOCKED
    again = Decision.objects.get(kind=Decision.Kind.BLOCK, status=Decision.Status.PENDING)
    assert again.idempotency_key == f"block:{worker.public_id}:{project.slug}:2"
    expect_block(stubber)
    assert outbox.execute_decision(again.pk, providers=providers) == "done"
    assert Decision.objects.filter(kind=Decision.Kind.BLOCK, status=Decision.Status.DONE).count() == 2


def test_an_unblock_waits_for_the_block_it_lifts(project, worker, boss, mturk):
    providers, stubber = mturk
    fail(worker, project, 2)
    block = Decision.objects.get(kind=Decision.Kind.BLOCK)
    annotator_set_status(annotator=worker, status="active", project=project, user=boss, reason="")
    unblock = Decision.objects.get(kind=Decision.Kind.UNBLOCK)
    assert unblock.reason == "Reactivated by a project manager."
    # The block has not reached MTurk yet: lifting first would leave the worker blocked when it does.
    assert outbox.execute_decision(unblock.pk, providers=providers) == "pending"
    assert Decision.objects.get(pk=unblock.pk).attempts == 0
    expect_block(stubber)
    expect_unblock(stubber, ANY)
    assert outbox.execute_pending(project, providers=providers).get("done", 0) >= 2
    assert set(Decision.objects.filter(pk__in=[block.pk, unblock.pk]).values_list("status", flat=True)) == {"done"}
    assert status_of(worker, project) == Annotator.Status.ACTIVE


class RecordingProlific:
    name = "prolific"

    def __init__(self):
        self.calls = []

    def block(self, *, worker_id, reason, project=None):
        self.calls.append(("block", worker_id, project))
        return {}

    def unblock(self, *, worker_id, reason, project=None):
        self.calls.append(("unblock", worker_id, project))
        return {}


def test_a_prolific_unblock_names_the_project_whose_blocklist_holds_the_worker(project, boss):
    prolific = RecordingProlific()
    participant = qualify(Annotator.objects.create(provider=Annotator.Provider.PROLIFIC,
                                                   external_id="6520a6f1c2b1a8d3e4f5aa01"), project)
    fail(participant, project, 2)
    annotator_set_status(annotator=participant, status="active", project=project, user=boss, reason="Appeal")
    for decision in Decision.objects.filter(kind__in=["block", "unblock"]).order_by("pk"):
        assert outbox.execute_decision(decision.pk, providers={("prolific", None): prolific}) == "done"
    assert prolific.calls == [("block", participant.external_id, project),
                              ("unblock", participant.external_id, project)]


def test_other_reactivations_are_recorded_here_and_start_afresh(project, worker, boss, django_user_model, mturk):
    providers, stubber = mturk  # No provider call may happen: the Stubber has no response queued.
    in_house = annotator_for(django_user_model.objects.create_user("inhouse"))
    fail(in_house, project, 2)
    assert status_of(in_house, project) == Annotator.Status.BLOCKED
    annotator_set_status(annotator=in_house, status="active", project=project, user=boss)
    annotator_set_status(annotator=in_house, status="active", project=project, user=boss)  # Already active.
    annotator_set_status(annotator=worker, status="paused", project=project, user=boss)
    annotator_set_status(annotator=worker, status="active", project=project, user=boss)
    unblocks = Decision.objects.filter(kind=Decision.Kind.UNBLOCK).order_by("pk")
    assert [(d.annotator_id, d.status, d.provider_response["reactivated_from"], d.created_by) for d in unblocks] == [
        (in_house.pk, Decision.Status.DONE, "blocked", boss), (worker.pk, Decision.Status.DONE, "paused", boss)]
    assert outbox.execute_pending(project, providers=providers) == {}  # Nothing for a provider to do.

    # The two old failures no longer count: one more failure does not block the in-house annotator again.
    fail(in_house, project, 1)
    assert status_of(in_house, project) == Annotator.Status.ACTIVE
    fail(in_house, project, 1)
    assert status_of(in_house, project) == Annotator.Status.BLOCKED
