"""The whole MTurk cycle against botocore's Stubber: publish, three workers accept and submit inside MTurk's
iframe (no cookies: the signed token carries the session and replaces CSRF), one fails the checks, sync, approve
and reject, bonus, block; the outbox ends empty and the ledger balances."""

from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
from botocore.stub import ANY
from django.test import Client
from django.urls import reverse

from annotation.crowd import outbox
from annotation.crowd.publishing import plan_publish, publish
from annotation.crowd.sync import sync_project
from annotation.models import Annotator, Assignment, Decision, LedgerEntry
from tests.crowd.conftest import form_for
from tests.crowd.stubs import assignment as remote
from tests.crowd.stubs import expect_add_place, expect_create_hit, expect_hit_type, expect_qualification_types, mturk_id

pytestmark = pytest.mark.django_db
WORKERS = ["A1WORKERGOODONE", "A2WORKERGOODTWO", "A3WORKERCARELESS"]


def publish_fv(corpus, provider, stubber):
    expect_qualification_types(stubber)
    hit_type = expect_hit_type(stubber)
    plan = plan_publish(project=corpus, task="fv", provider="mturk", sandbox=True)
    hit_ids = [mturk_id("3HIT", n) for n in range(len(plan.items))]
    for hit_id in hit_ids:
        expect_create_hit(stubber, hit_id, hit_type)
    return publish(plan=plan, provider=provider), hit_ids


def work_in_iframe(batch, hit_id: str, worker: str, n: int, *, passing: bool):
    """A worker's browser inside MTurk's iframe: third-party cookies blocked, CSRF enforced."""
    browser = Client(enforce_csrf_checks=True)
    entry = reverse("crowd_mturk_entry", args=[batch.public_id])
    response = browser.get(entry, {"assignmentId": mturk_id("3ASG", n), "hitId": hit_id, "workerId": worker,
                                   "turkSubmitTo": "https://workersandbox.mturk.com"})
    assert response.status_code == 302
    page = response["Location"]
    token = parse_qs(urlsplit(page).query)["ct"][0]
    browser.cookies.clear()  # the iframe keeps nothing
    response = browser.get(page)
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert "frame-ancestors https://www.mturk.com https://workersandbox.mturk.com" in csp
    assert "X-Frame-Options" not in response
    assignment = Assignment.objects.get(crowd_claim__external_assignment_id=mturk_id("3ASG", n))
    browser.cookies.clear()
    response = browser.post(reverse("hit_submit", args=[assignment.public_id]),
                            {**form_for(assignment, passing=passing), "crowd_token": token})
    assert response.status_code == 302, response.content[:500]
    done = browser.get(response["Location"])
    assert b"/mturk/externalSubmit" in done.content
    assert "form-action" in done["Content-Security-Policy"]
    return assignment


def test_it_runs_the_whole_cycle(corpus, mturk):
    provider, stubber = mturk
    corpus.bonus_every_hits, corpus.bonus_usd, corpus.block_after_failures = 1, Decimal("0.50"), 1
    corpus.save()
    batch, hit_ids = publish_fv(corpus, provider, stubber)
    assert batch.status == "published" and batch.crowd_hits.exclude(external_id="").count() == len(hit_ids)

    for n, worker in enumerate(WORKERS):
        work_in_iframe(batch, hit_ids[0], worker, n, passing=worker != "A3WORKERCARELESS")
    assert Assignment.objects.filter(status="submitted").count() == 3
    # Nothing follows from the page's word alone: the worker ids are not confirmed yet, so no decision exists, no
    # worker is blocked, and nothing counts.
    assert not Decision.objects.exists() and outbox.execute_pending(corpus, providers={("mturk", True): provider}) == {}
    assert Annotator.objects.get(external_id="A3WORKERCARELESS").status_in(corpus) == "active"
    assert not Assignment.objects.counted().exists()

    # sync: ListAssignmentsForHIT, paginated, confirms the three workers; the policy then decides, worker by worker
    # in the order MTurk lists them, and the outbox carries the decisions out in that order.
    page_one = [remote(mturk_id("3ASG", n), hit_ids[0], worker) for n, worker in enumerate(WORKERS[:2])]
    stubber.add_response("list_assignments_for_hit", {"Assignments": page_one, "NextToken": "page-2",
                                                      "NumResults": 2},
                         {"HITId": hit_ids[0], "MaxResults": 100, "AssignmentStatuses": ANY})
    stubber.add_response("list_assignments_for_hit", {"Assignments": [remote(mturk_id("3ASG", 2), hit_ids[0],
                                                                             WORKERS[2])], "NumResults": 1},
                         {"HITId": hit_ids[0], "MaxResults": 100, "AssignmentStatuses": ANY, "NextToken": "page-2"})
    for hit_id in hit_ids[1:]:
        stubber.add_response("list_assignments_for_hit", {"Assignments": [], "NumResults": 0},
                             {"HITId": hit_id, "MaxResults": 100, "AssignmentStatuses": ANY})
    sent_bonuses, approved = [], []
    for n, worker in enumerate(WORKERS[:2]):  # approve, then the bonus of a run of one good HIT
        approved.append(mturk_id("3ASG", n))
        stubber.add_response("approve_assignment", {}, {"AssignmentId": mturk_id("3ASG", n),
                                                        "RequesterFeedback": ANY})
        sent_bonuses.append(Decimal("0.50"))
        stubber.add_response("send_bonus", {}, {"WorkerId": worker, "BonusAmount": "0.50",
                                                "AssignmentId": mturk_id("3ASG", n), "Reason": ANY,
                                                "UniqueRequestToken": ANY})
    stubber.add_response("reject_assignment", {}, {"AssignmentId": mturk_id("3ASG", 2), "RequesterFeedback": ANY})
    expect_add_place(stubber, hit_ids[0])  # the careless worker's HIT gets one more assignment on MTurk
    # The block is the project's own qualification (no requester-wide CreateWorkerBlock).
    stubber.add_response("associate_qualification_with_worker", {}, {
        "QualificationTypeId": "3BLOCKQUALIFICATIONTYPE00001", "WorkerId": "A3WORKERCARELESS",
        "IntegerValue": 1, "SendNotification": False})

    result = sync_project(corpus, providers={("mturk", True): provider})

    assert result.verified == 3 and result.flagged == [] and result.discarded == []
    assert sorted(Decision.objects.values_list("kind", flat=True)) == sorted(
        ["approve", "approve", "bonus", "bonus", "reject", "extend", "block"])
    assert not Decision.objects.filter(status__in=["pending", "failed"]).exists()  # the outbox is empty
    assert Annotator.objects.get(external_id="A3WORKERCARELESS").status_in(corpus) == "blocked"
    assert Assignment.objects.counted().count() == 2
    # Every decision cites the confirmed submission(s) it rests on.
    for decision in Decision.objects.all():
        cited = list(decision.rests_on.all())
        assert cited and all(assignment.confirmed_at is not None for assignment in cited)
    # The ledger balances: what MTurk was told to pay, plus its 20% fee, is what the ledger holds.
    reward = batch.reward_usd
    expected = len(approved) * (reward + (reward * Decimal("0.20")).quantize(Decimal("0.01"))) + sum(
        amount + (amount * Decimal("0.20")).quantize(Decimal("0.01")) for amount in sent_bonuses)
    assert outbox.spend(corpus)["total"] == expected
    assert LedgerEntry.objects.filter(kind="reward").count() == 2
    assert LedgerEntry.objects.filter(kind="bonus").count() == 2

    # Syncing again changes nothing and pays nothing (the Stubber has no response left to give).
    stubber.add_response("list_assignments_for_hit", {"Assignments": page_one, "NumResults": 2},
                         {"HITId": hit_ids[0], "MaxResults": 100, "AssignmentStatuses": ANY})
    for hit_id in hit_ids[1:]:
        stubber.add_response("list_assignments_for_hit", {"Assignments": [], "NumResults": 0},
                             {"HITId": hit_id, "MaxResults": 100, "AssignmentStatuses": ANY})
    again = sync_project(corpus, providers={("mturk", True): provider})
    assert again.decisions == {} and outbox.spend(corpus)["total"] == expected
