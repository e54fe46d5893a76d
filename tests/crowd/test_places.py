"""A failed crowd submission reopens one place for its HIT on the provider, through the outbox, exactly once: MTurk
(botocore's Stubber, so every request is checked against the real mturk service model) gets one more assignment on
the HIT; Prolific frees the place of a rejected submission by itself and, for one approved anyway, gets one more
place on the study (the loopback server checks the request). An override to pass before it is carried out
withdraws it; what MTurk refuses (an expired HIT, the 10-assignment fee line) fails for a person, in words."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from botocore.stub import ANY
from django.utils import timezone as dj_timezone

from annotation.crowd import outbox
from annotation.crowd.mturk import request_token
from annotation.crowd.prolific import ProlificProvider
from annotation.crowd.sync import sync_project
from annotation.models import Annotator, Assignment, CrowdClaim, Decision, LedgerEntry
from annotation.quality.policy import grade_and_apply_policy
from annotation.selectors import available_hits
from annotation.services.grades import grade_override
from tests.crowd.conftest import SUBMITTED_ASSIGNMENT as ASSIGNMENT
from tests.crowd.conftest import SUBMITTED_HIT as HIT
from tests.crowd.stubs import assignment as remote
from tests.crowd.stubs import expect_add_place, mturk_id
from tests.crowd.test_mturk_cycle import publish_fv, work_in_iframe
from tests.crowd.test_prolific import CARELESS, SESSIONS, STUDY, prolific, verified_submission  # noqa: F401
from tests.work import qualify

pytestmark = pytest.mark.django_db
WORKERS = ["A1WORKERGOODONE", "A2WORKERGOODTWO", "A3WORKERCARELESS", "A4WORKERFOURTH"]


def mturk_providers(provider):
    return {("mturk", True): provider}


def expect_list(stubber, hit_ids, first_hit_items):
    stubber.add_response("list_assignments_for_hit", {"Assignments": first_hit_items,
                                                      "NumResults": len(first_hit_items)},
                         {"HITId": hit_ids[0], "MaxResults": 100, "AssignmentStatuses": ANY})
    for hit_id in hit_ids[1:]:
        stubber.add_response("list_assignments_for_hit", {"Assignments": [], "NumResults": 0},
                             {"HITId": hit_id, "MaxResults": 100, "AssignmentStatuses": ANY})


def test_a_failed_mturk_worker_gets_a_fourth_worker_through_one_added_assignment(corpus, mturk):
    provider, stubber = mturk
    corpus.bonus_usd = Decimal("0.00")
    corpus.save()
    batch, hit_ids = publish_fv(corpus, provider, stubber)
    done = [work_in_iframe(batch, hit_ids[0], worker, n, passing=worker != "A3WORKERCARELESS")
            for n, worker in enumerate(WORKERS[:3])]
    hit = done[0].hit
    assert {assignment.hit for assignment in done} == {hit}

    # sync: the three are confirmed; two approvals, one rejection, and one more assignment on the HIT.
    expect_list(stubber, hit_ids, [remote(mturk_id("3ASG", n), hit_ids[0], worker)
                                   for n, worker in enumerate(WORKERS[:3])])
    careless = done[2]
    for assignment in done:
        kind = "reject" if assignment == careless else "approve"
        stubber.add_response(f"{kind}_assignment", {}, {"AssignmentId": assignment.crowd_claim.external_assignment_id,
                                                        "RequesterFeedback": ANY})
        if assignment == careless:
            # Exactly one CreateAdditionalAssignmentsForHIT, its token derived from the decision's key.
            expect_add_place(stubber, hit_ids[0], request_token(f"place:{careless.public_id}"))
    result = sync_project(corpus, providers=mturk_providers(provider))
    stubber.assert_no_pending_responses()

    assert result.decisions == {"done": 4}
    place = Decision.objects.get(kind="extend")
    assert place.idempotency_key == f"place:{careless.public_id}" and place.assignment == careless
    assert place.status == "done" and place.attempts == 1
    assert place.provider_response["max_before"] == 3 and place.provider_response["max_assignments"] == 4
    assert not LedgerEntry.objects.filter(decision=place).exists()  # a place is not money
    # The place MTurk now offers is the one given back here.
    fourth = qualify(Annotator.objects.create(provider="mturk", external_id=WORKERS[3]))
    assert hit in available_hits(fourth, corpus, "fv")
    again = work_in_iframe(batch, hit_ids[0], WORKERS[3], 3, passing=True)
    assert again.hit == hit

    # The next sync finds the fourth submission, approves it, and it counts: N submissions count on the HIT.
    expect_list(stubber, hit_ids, [
        remote(mturk_id("3ASG", 0), hit_ids[0], WORKERS[0], status="Approved"),
        remote(mturk_id("3ASG", 1), hit_ids[0], WORKERS[1], status="Approved"),
        remote(mturk_id("3ASG", 2), hit_ids[0], WORKERS[2], status="Rejected"),
        remote(mturk_id("3ASG", 3), hit_ids[0], WORKERS[3])])
    stubber.add_response("approve_assignment", {}, {"AssignmentId": mturk_id("3ASG", 3), "RequesterFeedback": ANY})
    result = sync_project(corpus, providers=mturk_providers(provider))

    assert result.verified == 4 and result.graded == 1 and result.decisions == {"done": 1}
    assert Assignment.objects.filter(hit=hit).counted().count() == corpus.annotators_per_unit
    assert Decision.objects.filter(kind="extend").count() == 1  # no second place, no second call
    late = qualify(Annotator.objects.create(provider="mturk", external_id="A5LATE"))
    assert hit not in available_hits(late, corpus, "fv")


def test_in_house_work_needs_no_place_on_a_provider(submitted, django_user_model):
    from tests.work import annotator_for

    in_house = annotator_for(django_user_model.objects.create_user("inhouse"))
    failed = Assignment.objects.create(hit=submitted.hit, annotator=in_house, expires_at=dj_timezone.now(),
                                       status="submitted", submitted_at=dj_timezone.now())
    assert not grade_and_apply_policy(failed).passed
    assert not Decision.objects.filter(annotator=in_house).exists()  # the local re-offer is all there is


def expect_reject(stubber):
    stubber.add_response("reject_assignment", {}, {"AssignmentId": ASSIGNMENT, "RequesterFeedback": ANY})


def test_an_override_to_pass_before_it_is_carried_out_withdraws_the_place(submitted, mturk, manager):
    provider, stubber = mturk
    grade = grade_and_apply_policy(submitted)
    place = Decision.objects.get(kind="extend")
    assert place.status == "pending"

    grade_override(grade=grade, passed=True, reason="The checks were misread; the answers are right.", user=manager)

    place.refresh_from_db()
    assert place.status == "cancelled" and place.attempts == 0
    # Only the approval reaches MTurk: no GetHIT, no CreateAdditionalAssignmentsForHIT (the Stubber would refuse).
    stubber.add_response("approve_assignment", {}, {"AssignmentId": ASSIGNMENT, "RequesterFeedback": ANY})
    assert outbox.execute_pending(submitted.hit.project, providers=mturk_providers(provider)) == {"done": 1}
    assert outbox.execute_decision(place.pk, providers=mturk_providers(provider)) == "cancelled"
    # Failed again: the place is decided again, under the same key.
    grade_override(grade=grade, passed=False, reason="The checks were failed after all.", user=manager)
    assert Decision.objects.get(pk=place.pk).status == "pending"
    assert Decision.objects.filter(kind="extend").count() == 1


def test_running_the_outbox_twice_adds_one_place(submitted, mturk, manager):
    provider, stubber = mturk
    grade = grade_and_apply_policy(submitted)
    expect_reject(stubber)
    expect_add_place(stubber, HIT, request_token(f"place:{submitted.public_id}"))

    assert outbox.execute_pending(submitted.hit.project, providers=mturk_providers(provider)) == {"done": 2}
    assert outbox.execute_pending(submitted.hit.project, providers=mturk_providers(provider)) == {}
    place = Decision.objects.get(kind="extend")
    assert outbox.execute_decision(place.pk, providers=mturk_providers(provider)) == "done"
    assert Decision.objects.get(pk=place.pk).attempts == 1
    # Carried out, then overridden to pass: the place stays (the HIT may end with one submission more than N).
    grade_override(grade=grade, passed=True, reason="Misread checks.", user=manager)
    assert Decision.objects.get(pk=place.pk).status == "done"


def place_decision(assignment, **fields) -> Decision:
    return Decision.objects.create(project=assignment.hit.project, annotator=assignment.annotator, kind="extend",
                                   assignment=assignment, idempotency_key=f"place:{assignment.public_id}", **fields)


def test_a_retry_after_an_unknown_outcome_adds_nothing_more(submitted, mturk):
    provider, stubber = mturk
    # The last attempt recorded MaxAssignments, sent the request and died: MTurk shows 4 now, so it went through.
    place = place_decision(submitted, attempts=1, provider_response={"max_before": 3})
    expect_add_place(stubber, HIT, max_assignments=4, send=False)

    assert outbox.execute_decision(place.pk, providers=mturk_providers(provider)) == "done"

    place.refresh_from_db()
    assert place.provider_response["already_done"] is True and place.provider_response["max_assignments"] == 4


def test_a_repeated_request_token_is_already_done(submitted, mturk):
    provider, stubber = mturk
    place = place_decision(submitted)
    stubber.add_response("get_hit", {"HIT": {"HITId": HIT, "MaxAssignments": 3,
                                             "Expiration": datetime.now(UTC) + timedelta(days=2)}},
                         {"HITId": HIT})
    stubber.add_client_error("create_additional_assignments_for_hit", service_error_code="RequestError",
                             http_status_code=400, service_message="The HIT extension already exists for this "
                             "UniqueRequestToken (request 7c1e).",
                             expected_params={"HITId": HIT, "NumberOfAdditionalAssignments": 1,
                                              "UniqueRequestToken": request_token(place.idempotency_key)})
    stubber.add_response("get_hit", {"HIT": {"HITId": HIT, "MaxAssignments": 4}}, {"HITId": HIT})

    assert outbox.execute_decision(place.pk, providers=mturk_providers(provider)) == "done"
    assert "already exists" in Decision.objects.get(pk=place.pk).provider_response["message"]


def test_an_expired_hit_fails_for_a_person(submitted, mturk):
    provider, stubber = mturk
    place = place_decision(submitted)
    expect_add_place(stubber, HIT, expiration=datetime.now(UTC) - timedelta(hours=2), send=False)

    assert outbox.execute_decision(place.pk, providers=mturk_providers(provider)) == "failed"

    error = Decision.objects.get(pk=place.pk).last_error
    assert "hit_expired" in error and "expired on" in error and "Extend the HIT first" in error


def test_mturk_s_ten_assignment_fee_line_is_refused_in_words(submitted, mturk):
    provider, stubber = mturk
    place = place_decision(submitted)
    expect_add_place(stubber, HIT, max_assignments=9, send=False)

    assert outbox.execute_decision(place.pk, providers=mturk_providers(provider)) == "failed"

    error = Decision.objects.get(pk=place.pk).last_error
    assert "InvalidMaximumAssignmentsIncrease" in error and "fewer than 10 to 10 or more" in error


def test_no_place_is_reopened_for_a_hit_that_n_counted_submissions_fill(submitted, mturk):
    from annotation.models import Grade

    provider, _ = mturk
    place = place_decision(submitted)
    for n in range(3):  # filled meanwhile, e.g. through a private link
        other = Assignment.objects.create(hit=submitted.hit, expires_at=dj_timezone.now(), status="submitted",
                                          annotator=Annotator.objects.create(provider="link", external_id=f"l{n}"))
        Grade.objects.create(assignment=other, passed=True)

    assert outbox.execute_decision(place.pk, providers=mturk_providers(provider)) == "cancelled"  # and no call

    place.refresh_from_db()
    assert place.attempts == 0 and "already has all the submissions" in place.last_error


def test_places_of_one_batch_are_added_one_at_a_time(submitted, mturk):
    provider, _ = mturk
    other = Assignment.objects.create(hit=submitted.hit, expires_at=dj_timezone.now(), status="submitted",
                                      annotator=Annotator.objects.create(provider="mturk", external_id="A2WORKER"))
    CrowdClaim.objects.create(assignment=other, batch=submitted.crowd_claim.batch, provider="mturk", verified=True,
                              external_assignment_id="3ASG2", external_hit_id=HIT, worker_id="A2WORKER")
    place_decision(other, attempts=1)  # being added, or waiting for a retry
    waiting = place_decision(submitted)

    assert outbox.execute_decision(waiting.pk, providers=mturk_providers(provider)) == "pending"
    assert Decision.objects.get(pk=waiting.pk).attempts == 0


# --- Prolific, against the loopback server

def test_a_rejected_prolific_submission_frees_its_place_without_a_call(corpus, prolific):
    batch, assignment = verified_submission(corpus, prolific)
    prolific.route("POST", f"/api/v1/submissions/{SESSIONS[CARELESS]}/transition/", "submission_rejected.json")
    grade_and_apply_policy(assignment)
    requests_before = len(prolific.requests)

    assert outbox.execute_pending(corpus) == {"done": 2}

    place = Decision.objects.get(kind="extend")
    assert place.provider_response == {"local": True, "freed_by_rejection": True}
    # One request in all, the rejection: "The study place becomes available for another participant."
    assert [(call.method, call.body["action"]) for call in prolific.requests[requests_before:]] == [
        ("POST", "REJECT")]


def test_a_prolific_submission_approved_anyway_adds_one_place_to_the_study(corpus, prolific):
    corpus.reject_failed = False
    corpus.save()
    batch, assignment = verified_submission(corpus, prolific)
    session = SESSIONS[CARELESS]
    prolific.route("POST", f"/api/v1/submissions/{session}/transition/", "submission_approved.json")
    prolific.route("PATCH", f"/api/v1/studies/{STUDY}/", "study_places_added.json")
    grade_and_apply_policy(assignment)
    gets_before = len(prolific.calls("GET", f"/api/v1/studies/{STUDY}/"))

    assert outbox.execute_pending(corpus) == {"done": 2}

    assert [call.body for call in prolific.calls("PATCH", f"/api/v1/studies/{STUDY}/")] == [
        {"total_available_places": 13}]  # study_get.json: 12 places
    assert len(prolific.calls("GET", f"/api/v1/studies/{STUDY}/")) == gets_before + 1
    place = Decision.objects.get(kind="extend")
    assert place.provider_response["target"] == 13 and place.provider_response["total_available_places"] == 13
    # Running the outbox again sends nothing.
    assert outbox.execute_pending(corpus) == {}
    assert len(prolific.calls("PATCH")) == 1


def test_a_prolific_retry_that_finds_the_places_added_sends_nothing(corpus, prolific):
    batch, assignment = verified_submission(corpus, prolific)
    place = place_decision(assignment, attempts=1, provider_response={"target": 13})
    prolific.route("GET", f"/api/v1/studies/{STUDY}/", "study_places_added.json")

    assert outbox.execute_decision(place.pk) == "done"

    assert not prolific.calls("PATCH")
    assert Decision.objects.get(pk=place.pk).provider_response["already_done"] is True


def test_the_loopback_server_refuses_a_study_update_of_the_wrong_shape(corpus, prolific):
    from annotation.crowd.base import ProviderError

    verified_submission(corpus, prolific)
    prolific.route("PATCH", f"/api/v1/studies/{STUDY}/", "study_places_added.json")
    provider = ProlificProvider()
    for body in ({"total_available_places": 11}, {"total_available_places": "13"},
                 {"total_available_places": 13, "reward": 50}):
        with pytest.raises(ProviderError) as refused:
            provider.call("PATCH", f"/api/v1/studies/{STUDY}/", body)
        assert refused.value.code == "400"


# --- The manager's pages

def test_a_manager_adds_a_place_by_hand_on_one_of_the_worker_s_submissions(submitted, manager, annotator, client,
                                                                            django_capture_on_commit_callbacks):
    from django.urls import reverse

    project = submitted.hit.project
    url = reverse("crowd_decide", args=[project.slug, submitted.annotator.public_id])
    form = {"kind": "extend", "reason": "The HIT's lifetime was extended on MTurk; offer it again.", "nonce": "p1"}
    client.force_login(annotator)
    assert client.post(url, {**form, "assignment": submitted.public_id}).status_code == 403
    client.force_login(manager)
    with django_capture_on_commit_callbacks(execute=False):
        client.post(url, form)  # no submission chosen: refused
        assert not Decision.objects.exists()
        client.post(url, {**form, "assignment": submitted.public_id})
    decision = Decision.objects.get()
    assert (decision.kind, decision.assignment, decision.created_by) == ("extend", submitted, manager)

    Decision.objects.filter(pk=decision.pk).update(status="done", provider_response={"max_assignments": 4})
    page = client.get(reverse("crowd_manage", args=[project.slug])).content.decode()
    row = page[page.index('id="batches"'):]
    assert "Places added" in row and '<td class="num">1</td><td class="num">0.00</td>' in row
