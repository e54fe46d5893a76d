"""A manager overturns a grade after the policy's decision: on MTurk (botocore's Stubber, so every request is checked
against the real service model) a rejection already sent is reversed with ApproveAssignment's OverrideRejection, a
rejection not yet sent is withdrawn and never sent; an approval cannot be taken back; the reward is paid once."""

from decimal import Decimal

import pytest
from botocore.stub import ANY

from annotation.crowd import outbox
from annotation.models import Decision, LedgerEntry
from annotation.quality.policy import grade_and_apply_policy
from annotation.services.grades import grade_override
from tests.crowd.conftest import SUBMITTED_ASSIGNMENT as ASSIGNMENT
from tests.crowd.conftest import SUBMITTED_HIT as HIT
from tests.crowd.stubs import expect_add_place

pytestmark = pytest.mark.django_db


def run_outbox(project, provider):
    return outbox.execute_pending(project, providers={("mturk", True): provider})


def reward_and_fee() -> Decimal:
    reward = Decimal("0.40")
    return reward + (reward * Decimal("0.20")).quantize(Decimal("0.01"))  # MTurk's 20% commission


def test_an_approval_after_a_sent_rejection_overrides_it(submitted, mturk, manager):
    provider, stubber = mturk
    grade = grade_and_apply_policy(submitted)
    assert not grade.passed
    stubber.add_response("reject_assignment", {}, {"AssignmentId": ASSIGNMENT, "RequesterFeedback": ANY})
    expect_add_place(stubber, HIT)  # the failed submission's HIT is offered again on MTurk
    assert run_outbox(submitted.hit.project, provider) == {"done": 2}
    stubber.assert_no_pending_responses()

    grade_override(grade=grade, passed=True, reason="The checks were misread; the answers are right.", user=manager)

    approve = Decision.objects.get(kind="approve")
    assert approve.status == "pending"
    # MTurk's own state is read first, then the rejection is overridden (the Stubber checks both requests
    # against the mturk service model, and the exact parameters below).
    stubber.add_response("get_assignment", {"Assignment": {"AssignmentId": ASSIGNMENT, "AssignmentStatus": "Rejected"}},
                         {"AssignmentId": ASSIGNMENT})
    stubber.add_response("approve_assignment", {}, {"AssignmentId": ASSIGNMENT, "OverrideRejection": True,
                                                    "RequesterFeedback": "Thank you for your careful work."})
    assert run_outbox(submitted.hit.project, provider) == {"done": 1}
    approve.refresh_from_db()
    assert approve.status == "done" and approve.provider_response["overrode_rejection"] is True

    # The reward is paid once, with its fee, and nothing for the rejection.
    assert list(LedgerEntry.objects.values_list("kind", flat=True).order_by("kind")) == ["reward", "reward_fee"]
    assert outbox.spend(submitted.hit.project)["total"] == reward_and_fee()
    # A second run sends nothing (the Stubber has no answer left to give).
    assert run_outbox(submitted.hit.project, provider) == {}


def test_a_rejection_not_yet_sent_is_withdrawn_and_never_sent(submitted, mturk, manager):
    provider, stubber = mturk
    grade = grade_and_apply_policy(submitted)
    reject = Decision.objects.get(kind="reject")
    assert reject.status == "pending" and reject.attempts == 0

    grade_override(grade=grade, passed=True, reason="The checks were misread; the answers are right.", user=manager)

    reject.refresh_from_db()
    assert reject.status == "cancelled" and reject.attempts == 0
    # A plain approval: no GetAssignment, no OverrideRejection (the Stubber compares the parameters exactly), and no
    # RejectAssignment ever (the Stubber would refuse a call it was not told to expect).
    stubber.add_response("approve_assignment", {}, {"AssignmentId": ASSIGNMENT,
                                                    "RequesterFeedback": "Thank you for your careful work."})
    assert run_outbox(submitted.hit.project, provider) == {"done": 1}
    assert outbox.execute_decision(reject.pk, providers={("mturk", True): provider}) == "cancelled"
    assert outbox.spend(submitted.hit.project)["total"] == reward_and_fee()


def test_a_rejection_whose_outcome_is_unknown_is_checked_with_mturk_first(submitted, mturk, manager):
    provider, stubber = mturk
    grade = grade_and_apply_policy(submitted)
    # The rejection was being sent when the manager withdrew it: it may or may not have reached MTurk.
    Decision.objects.filter(kind="reject").update(attempts=1, status="cancelled")
    grade_override(grade=grade, passed=True, reason="Misread checks.", user=manager)
    stubber.add_response("get_assignment", {"Assignment": {"AssignmentId": ASSIGNMENT,
                                                           "AssignmentStatus": "Submitted"}},
                         {"AssignmentId": ASSIGNMENT})
    stubber.add_response("approve_assignment", {}, {"AssignmentId": ASSIGNMENT, "RequesterFeedback": ANY})
    assert run_outbox(submitted.hit.project, provider) == {"done": 1}
    assert LedgerEntry.objects.filter(kind="reward").count() == 1


def test_an_approval_cannot_be_taken_back(submitted, mturk, manager):
    provider, stubber = mturk
    grade = grade_and_apply_policy(submitted)
    grade_override(grade=grade, passed=True, reason="Misread checks.", user=manager)
    stubber.add_response("approve_assignment", {}, {"AssignmentId": ASSIGNMENT, "RequesterFeedback": ANY})
    run_outbox(submitted.hit.project, provider)

    grade_override(grade=grade, passed=False, reason="On second thought the checks were failed.", user=manager)

    reject = Decision.objects.get(kind="reject")
    assert reject.status == "pending"
    # No rejection reaches MTurk; the approved, now failed, submission still needs its HIT's place back there.
    expect_add_place(stubber, HIT)
    assert run_outbox(submitted.hit.project, provider) == {"cancelled": 1, "done": 1}
    reject.refresh_from_db()
    assert "approved and paid" in reject.last_error and reject.attempts == 0
    assert outbox.spend(submitted.hit.project)["total"] == reward_and_fee()


def test_a_second_approval_of_the_same_assignment_pays_nothing_more(submitted, mturk, manager):
    provider, stubber = mturk
    grade = grade_and_apply_policy(submitted)
    grade_override(grade=grade, passed=True, reason="Misread checks.", user=manager)
    stubber.add_response("approve_assignment", {}, {"AssignmentId": ASSIGNMENT, "RequesterFeedback": ANY})
    run_outbox(submitted.hit.project, provider)
    manual = Decision.objects.create(project=submitted.hit.project, annotator=submitted.annotator,
                                     assignment=submitted, kind="approve", idempotency_key="manual:approve:1")
    stubber.add_client_error("approve_assignment", service_error_code="RequestError", http_status_code=400,
                             service_message="This operation can be called with a status of: Submitted",
                             expected_params={"AssignmentId": ASSIGNMENT, "RequesterFeedback": ANY})
    stubber.add_response("get_assignment", {"Assignment": {"AssignmentId": ASSIGNMENT, "AssignmentStatus": "Approved"}},
                         {"AssignmentId": ASSIGNMENT})

    assert outbox.execute_decision(manual.pk, providers={("mturk", True): provider}) == "done"

    assert LedgerEntry.objects.filter(kind="reward").count() == 1
    assert outbox.spend(submitted.hit.project)["total"] == reward_and_fee()
