"""Publishing on MTurk against the Stubber: a crashed run resumes without duplicates, the HIT type carries the
protocol's qualifications (paper G.1), our own parameter checks, errors, and the dry run of `publish`."""

from decimal import Decimal
from io import StringIO

import pytest
from botocore.stub import ANY
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.crowd.base import AlreadyDone, ProviderError, ProviderTransientError
from annotation.crowd.mturk import check_params, request_token
from annotation.crowd.publishing import plan_publish, publish
from annotation.models import CrowdBatch, CrowdHit, ProviderResource
from tests.crowd.stubs import expect_create_hit, expect_hit_type, expect_qualification_types, mturk_id

pytestmark = pytest.mark.django_db


def test_it_resumes_a_crashed_publish_without_duplicates(corpus, mturk):
    provider, stubber = mturk
    expect_qualification_types(stubber)
    hit_type = expect_hit_type(stubber)
    plan = plan_publish(project=corpus, task="fv", provider="mturk", sandbox=True)
    assert len(plan.items) == 4
    expect_create_hit(stubber, mturk_id("3HIT", 0), hit_type)
    # MTurk created the second HIT but the answer never arrived.
    stubber.add_client_error("create_hit_with_hit_type", service_error_code="ServiceFault",
                             service_message="Service unavailable", http_status_code=500)
    with pytest.raises(ProviderTransientError):
        publish(plan=plan, provider=provider)
    batch = CrowdBatch.objects.get()
    assert batch.status == "publishing"
    tokens = list(batch.crowd_hits.order_by("hit__position").values_list("request_token", flat=True))
    assert batch.crowd_hits.exclude(external_id="").count() == 1

    # The re-run sends the same token for the second HIT; MTurk answers that it exists, naming its id.
    stubber.add_client_error(
        "create_hit_with_hit_type", service_error_code="RequestError", http_status_code=400,
        service_message=f"The HIT with ID \"{mturk_id('3HIT', 1)}\" already exists. (1700000000000)",
        modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists"},
        expected_params={"HITTypeId": hit_type, "MaxAssignments": 3, "LifetimeInSeconds": ANY, "Question": ANY,
                         "RequesterAnnotation": tokens[1], "UniqueRequestToken": tokens[1]})
    for n in (2, 3):
        expect_create_hit(stubber, mturk_id("3HIT", n), hit_type, token=tokens[n])
    again = plan_publish(project=corpus, task="fv", provider="mturk", sandbox=True)
    resumed = publish(plan=again, provider=provider)

    assert resumed.pk == batch.pk and resumed.status == "published"
    ids = list(CrowdHit.objects.order_by("hit__position").values_list("external_id", flat=True))
    assert ids == [mturk_id("3HIT", n) for n in range(4)]
    assert CrowdHit.objects.count() == 4 and ProviderResource.objects.count() == 3  # 2 qualifications, 1 HIT type
    # Published everywhere: a third plan has nothing left to create.
    assert plan_publish(project=corpus, task="fv", provider="mturk", sandbox=True).items == []


def test_it_requires_the_protocols_qualifications(corpus, mturk):
    provider, stubber = mturk
    expect_qualification_types(stubber)
    requirements = provider.qualification_requirements(corpus)
    by_id = {item["QualificationTypeId"]: item for item in requirements}
    assert by_id["000000000000000000L0"]["IntegerValues"] == [95]
    assert by_id["000000000000000000L0"]["Comparator"] == "GreaterThanOrEqualTo"
    assert by_id["00000000000000000040"]["IntegerValues"] == [1000]
    assert by_id["00000000000000000071"] == {"QualificationTypeId": "00000000000000000071", "Comparator": "In",
                                             "ActionsGuarded": "Accept", "LocaleValues": [
                                                 {"Country": c} for c in ("AU", "CA", "NZ", "GB", "US")]}
    assert by_id["3TESTQUALIFICATIONTYPE000001"]["IntegerValues"] == [100]
    assert by_id["3BLOCKQUALIFICATIONTYPE00001"]["Comparator"] == "DoesNotExist"
    check_params({"QualificationRequirements": requirements})


@pytest.mark.parametrize("params", [
    {"Reward": "1.5"}, {"Reward": "$1.50"}, {"BonusAmount": "25"}, {"HITId": "3abc-lower"},
    {"WorkerId": "A1 SPACE"}, {"QualificationRequirements": [{"QualificationTypeId": "X1", "Comparator": "Bigger"}]},
    {"QualificationRequirements": [{"QualificationTypeId": "X1", "Comparator": "Exists", "ActionsGuarded": "All"}]},
])
def test_it_checks_what_the_service_model_does_not(params):
    with pytest.raises(ValueError):
        check_params(params)


def test_it_maps_mturk_errors(mturk):
    provider, stubber = mturk
    stubber.add_client_error("get_account_balance", service_error_code="ServiceFault", http_status_code=500)
    with pytest.raises(ProviderTransientError):
        provider.call("get_account_balance")
    stubber.add_client_error("get_account_balance", service_error_code="RequestError", service_message="No.",
                             http_status_code=400, modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.Denied"})
    with pytest.raises(ProviderError) as refused:
        provider.call("get_account_balance")
    assert refused.value.code == "AWS.MechanicalTurk.Denied" and not isinstance(refused.value, ProviderTransientError)


def test_a_repeated_bonus_token_is_already_paid(mturk):
    provider, stubber = mturk
    claim = type("Claim", (), {"external_assignment_id": mturk_id("3ASG", 1)})()
    stubber.add_client_error(
        "send_bonus", service_error_code="RequestError", http_status_code=400,
        service_message="The bonus with this UniqueRequestToken already exists.",
        expected_params={"WorkerId": "A1WORKER", "BonusAmount": "25.00", "AssignmentId": mturk_id("3ASG", 1),
                         "Reason": "500 good HITs", "UniqueRequestToken": request_token("bonus:x:alpha:1")})
    with pytest.raises(AlreadyDone):
        provider.pay_bonus(worker_id="A1WORKER", claim=claim, amount=Decimal("25.00"), reason="500 good HITs",
                           token="bonus:x:alpha:1", state={}, checkpoint=lambda state: None)
    assert len(request_token("bonus:x:alpha:1")) == 64  # MTurk's limit for UniqueRequestToken


def test_an_assignment_approved_before_is_already_done(mturk):
    provider, stubber = mturk
    claim = type("Claim", (), {"external_assignment_id": mturk_id("3ASG", 1)})()
    stubber.add_client_error("approve_assignment", service_error_code="RequestError", http_status_code=400,
                             service_message="This operation can be called with a status of: Submitted")
    stubber.add_response("get_assignment", {"Assignment": {"AssignmentId": mturk_id("3ASG", 1),
                                                           "AssignmentStatus": "Approved"}},
                         {"AssignmentId": mturk_id("3ASG", 1)})
    with pytest.raises(AlreadyDone):
        provider.approve(claim, "Thanks")


def test_it_notifies_at_most_100_workers_a_call_and_expires_and_extends(corpus, mturk):
    provider, stubber = mturk
    workers = [f"A{n:05d}" for n in range(150)]
    stubber.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []},
                         {"Subject": "New HITs", "MessageText": "Hello", "WorkerIds": workers[:100]})
    stubber.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []},
                         {"Subject": "New HITs", "MessageText": "Hello", "WorkerIds": workers[100:]})
    provider.notify(worker_ids=workers, subject="New HITs", message="Hello")
    batch = CrowdBatch.objects.create(project=corpus, task="fv", provider="mturk", sandbox=True,
                                      reward_usd=Decimal("0.50"), assignments_per_hit=3)
    CrowdHit.objects.create(batch=batch, hit=corpus.hits.first(), request_token="t1", external_id=mturk_id("3HIT", 9))
    stubber.add_response("update_expiration_for_hit", {}, {"HITId": mturk_id("3HIT", 9), "ExpireAt": ANY})
    stubber.add_response("update_expiration_for_hit", {}, {"HITId": mturk_id("3HIT", 9), "ExpireAt": ANY})
    provider.expire(batch)
    provider.extend_expiry(batch, hours=24)


def test_the_dry_run_prints_what_would_be_created_and_its_cost(corpus):
    out, err = StringIO(), StringIO()
    call_command("publish", project=corpus.slug, task="fv", provider="mturk", sandbox=True, dry_run=True,
                 stdout=out, stderr=err)
    text = out.getvalue()
    assert "Amazon Mechanical Turk closed for good on 2026-09-30" in err.getvalue()
    plan = plan_publish(project=corpus, task="fv", provider="mturk", sandbox=True)
    reward = plan.reward_usd
    rewards = reward * 12
    fees = (rewards * Decimal("0.20")).quantize(Decimal("0.01"))
    assert "mturk-requester-sandbox.us-east-1.amazonaws.com (sandbox)" in text
    assert "CreateQualificationType 'finegrain summary annotation test': 10 questions" in text
    assert f"Reward={reward:.2f}" in text and "In AU,CA,NZ,GB,US" in text and "DoesNotExist" in text
    assert "CreateHITWithHITType x 4: MaxAssignments=3" in text
    assert f"12 assignments x {reward:.2f} USD = {rewards:.2f} + fees {fees:.2f} (0.20)" in text
    assert f"= {rewards + fees:.2f} USD (MTurk's sandbox: nothing is paid)" in text
    assert "Dry run: nothing was sent to Amazon Mechanical Turk and nothing was created." in text
    assert not CrowdBatch.objects.exists() and not ProviderResource.objects.exists()


def test_the_cost_adds_mturks_extra_fee_from_ten_assignments(corpus):
    corpus.annotators_per_unit = 10
    corpus.save()
    estimate = plan_publish(project=corpus, task="fv", provider="mturk", sandbox=True).estimate
    assert estimate.fee_rate == Decimal("0.40") and estimate.assignments == 40


def test_publish_refuses_bad_input(corpus):
    with pytest.raises(CommandError):
        call_command("publish", project="nope", task="fv", provider="mturk", dry_run=True, stdout=StringIO())
    with pytest.raises(CommandError):
        call_command("publish", project=corpus.slug, task="xx", provider="mturk", dry_run=True, stdout=StringIO(),
                     stderr=StringIO())


def test_publish_refuses_plain_http_for_mturk(corpus, settings):
    settings.SITE_URL = "http://127.0.0.1:8000"
    with pytest.raises(CommandError, match="HTTPS"):
        call_command("publish", project=corpus.slug, task="fv", provider="mturk", sandbox=True, yes=True,
                     stdout=StringIO(), stderr=StringIO())


def test_each_project_blocks_with_its_own_qualification_and_never_requester_wide(corpus, other_project, mturk):
    """A block keeps the worker from the blocking project's HITs only: each project's HIT types require that the
    worker lacks the project's own "blocked" qualification; no CreateWorkerBlock (it covers every HIT we publish)."""
    provider, stubber = mturk
    for project, qualification in ((corpus, "3BLOCKALPHA00000000000000001"), (other_project, "3BLOCKBETA000000000001")):
        name = f"finegrain blocked ({project.slug})"
        stubber.add_response("create_qualification_type", {"QualificationType": {
            "QualificationTypeId": qualification, "Name": name, "QualificationTypeStatus": "Active"}},
            {"Name": name, "QualificationTypeStatus": "Active", "Description": ANY})
        stubber.add_response("associate_qualification_with_worker", {}, {
            "QualificationTypeId": qualification, "WorkerId": "A1WORKER", "IntegerValue": 1,
            "SendNotification": False})
        assert provider.block(worker_id="A1WORKER", reason="Failed checks", project=project)["qualification"] == (
            qualification)
    stubber.add_response("disassociate_qualification_from_worker", {}, {
        "QualificationTypeId": "3BLOCKBETA000000000001", "WorkerId": "A1WORKER", "Reason": "Appeal"})
    provider.unblock(worker_id="A1WORKER", reason="Appeal", project=other_project)  # alpha's block stays
