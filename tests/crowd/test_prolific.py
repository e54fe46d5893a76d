"""Prolific end to end against recorded fixtures served on loopback: a study per batch, participants arriving
with PROLIFIC_PID/STUDY_ID/SESSION_ID, approve/reject through transitions, a bonus created then paid once, the
blocklist group; requests checked for method, path, headers and body."""

from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.crowd import outbox
from annotation.crowd.prolific import ProlificProvider
from annotation.crowd.publishing import plan_publish, publish
from annotation.crowd.sync import sync_project
from annotation.models import Annotator, Assignment, CrowdBatch, CrowdClaim, Decision, LedgerEntry
from tests.crowd.conftest import form_for
from tests.crowd.prolific_server import ProlificServer, start
from tests.work import qualify

pytestmark = pytest.mark.django_db
STUDY = "60f6acb180a5ff0e2f2e7c11"
GROUP = "651d4f3c2d1b4a0012345678"
GOOD, CARELESS = "5f1e0000000000000000aaaa", "5f1e0000000000000000bbbb"
SESSIONS = {GOOD: "60f6b2c1d4e5f6a7b8c90001", CARELESS: "60f6b2c1d4e5f6a7b8c90002"}
WORKSPACE = "6520a6f1c2b1a8d3e4f5aaaa"  # tests/crowd/conftest.py


@pytest.fixture
def prolific(settings):
    state = ProlificServer()
    httpd = start(state)
    settings.FINEGRAIN_PROLIFIC_API_URL = state.url
    yield state
    httpd.shutdown()
    httpd.server_close()


def publish_study(corpus, prolific):
    prolific.route("POST", "/api/v1/participant-groups/", "participant_group_create.json", 201)
    prolific.route("POST", "/api/v1/studies/", "study_create.json", 201)
    prolific.route("GET", f"/api/v1/studies/{STUDY}/", "study_get.json")
    prolific.route("POST", f"/api/v1/studies/{STUDY}/transition/", "study_transition_publish.json")
    # Each participant's session as Prolific reports it when they arrive (anything else is a 404).
    prolific.route("GET", f"/api/v1/submissions/{SESSIONS[GOOD]}/", "submission_active.json")
    prolific.route("GET", f"/api/v1/submissions/{SESSIONS[CARELESS]}/", "submission_active_2.json")
    plan = plan_publish(project=corpus, task="fv", provider="prolific")
    return publish(plan=plan, provider=ProlificProvider())


def arrive(batch, participant):
    return Client().get(reverse("crowd_prolific_entry", args=[batch.public_id]), {
        "PROLIFIC_PID": participant, "STUDY_ID": STUDY, "SESSION_ID": SESSIONS[participant]})


def test_it_runs_a_study_from_publication_to_payment(corpus, prolific):
    corpus.bonus_every_hits, corpus.bonus_usd, corpus.block_after_failures = 1, Decimal("0.50"), 1
    corpus.save()
    batch = publish_study(corpus, prolific)
    assert batch.external_id == STUDY and batch.status == "published"
    created = prolific.calls("POST", "/api/v1/studies/")[0]
    assert created.headers["Authorization"] == "Token test-token"
    assert created.body["external_study_url"] == (
        f"https://finegrain.example.org/crowd/prolific/{batch.public_id}/"
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    assert created.body["prolific_id_option"] == "url_parameters"
    assert created.body["completion_codes"] == [{"code": batch.completion_code, "code_type": "COMPLETED",
                                                 "actions": [{"action": "MANUALLY_REVIEW"}]}]
    assert created.body["total_available_places"] == 12 and created.body["reward"] == int(batch.reward_usd * 100)
    assert created.body["filters"] == [{"filter_id": "participant_group_blocklist", "selected_values": [GROUP]}]
    # The group is created in the workspace (docs.prolific.com: name plus workspace_id or organisation_id).
    assert prolific.calls("POST", "/api/v1/participant-groups/")[0].body == {
        "name": "finegrain blocked (alpha)", "workspace_id": WORKSPACE,
        "description": "Participants blocked after repeated failed attention checks."}
    assert prolific.calls("POST", f"/api/v1/studies/{STUDY}/transition/")[0].body == {"action": "PUBLISH"}

    # An unscreened participant is sent to the screening test first (annotation/quality).
    first = arrive(batch, GOOD)
    assert first.status_code == 302 and reverse("work_screening", args=[corpus.slug]) in first["Location"]
    qualify(Annotator.objects.create(provider="prolific", external_id=CARELESS))
    qualify(Annotator.objects.get(provider="prolific", external_id=GOOD))
    for participant in (GOOD, CARELESS):
        response = arrive(batch, participant)
        assert response.status_code == 302 and "/work/hits/" in response["Location"]
        token = parse_qs(urlsplit(response["Location"]).query)["ct"][0]
        page = Client().get(response["Location"])
        assert "frame-ancestors 'none'" in page["Content-Security-Policy"]  # Prolific opens a new tab
        assignment = Assignment.objects.get(crowd_claim__external_assignment_id=SESSIONS[participant])
        submitted = Client(enforce_csrf_checks=True).post(
            reverse("hit_submit", args=[assignment.public_id]),
            {**form_for(assignment, passing=participant == GOOD), "crowd_token": token})
        done = Client().get(submitted["Location"])
        assert f"https://app.prolific.com/submissions/complete?cc={batch.completion_code}".encode() in done.content

    prolific.route("GET", f"/api/v1/studies/{STUDY}/submissions/", "submissions_page_1.json")
    prolific.route("GET", f"/api/v1/studies/{STUDY}/submissions/?page=2", "submissions_page_2.json")
    prolific.route("POST", f"/api/v1/submissions/{SESSIONS[GOOD]}/transition/", "submission_approved.json")
    prolific.route("POST", f"/api/v1/submissions/{SESSIONS[CARELESS]}/transition/", "submission_rejected.json")
    prolific.route("POST", "/api/v1/submissions/bonus-payments/", "bonus_payments_create.json", 201)
    prolific.route("POST", "/api/v1/bulk-bonus-payments/60f6c0ffee0000000000b001/pay/", None, 202)
    prolific.route("POST", f"/api/v1/participant-groups/{GROUP}/participants/", "participant_group_participants.json")

    result = sync_project(corpus)

    assert result.verified == 2 and result.flagged == []
    assert not Decision.objects.exclude(status="done").exists()
    approve = prolific.calls("POST", f"/api/v1/submissions/{SESSIONS[GOOD]}/transition/")
    assert [call.body for call in approve] == [{"action": "APPROVE"}]
    reject = prolific.calls("POST", f"/api/v1/submissions/{SESSIONS[CARELESS]}/transition/")[0].body
    assert reject["action"] == "REJECT" and reject["rejection_category"] == "FAILED_CHECK"
    assert len(reject["message"]) >= 100
    bonus = prolific.calls("POST", "/api/v1/submissions/bonus-payments/")
    assert [call.body for call in bonus] == [{"study_id": STUDY, "csv_bonuses": f"{GOOD},0.50\n"}]
    assert len(prolific.calls("POST", "/api/v1/bulk-bonus-payments/60f6c0ffee0000000000b001/pay/")) == 1
    blocked = prolific.calls("POST", f"/api/v1/participant-groups/{GROUP}/participants/")
    assert [call.body for call in blocked] == [{"participant_ids": [CARELESS]}]
    assert all(call.headers["Authorization"] == "Token test-token" for call in prolific.requests)
    # The ledger: one reward with Prolific's fee rate, one bonus with the fee Prolific reported (17 cents).
    reward = batch.reward_usd
    fee = (reward * Decimal("0.333")).quantize(Decimal("0.01"))
    assert outbox.spend(corpus)["total"] == reward + fee + Decimal("0.50") + Decimal("0.17")
    assert LedgerEntry.objects.get(kind="bonus_fee").amount_usd == Decimal("0.17")

    # A second sync pays nothing again.
    sync_project(corpus)
    assert len(prolific.calls("POST", "/api/v1/bulk-bonus-payments/60f6c0ffee0000000000b001/pay/")) == 1
    assert len(prolific.calls("POST", "/api/v1/submissions/bonus-payments/")) == 1


def test_an_uncertain_bonus_payment_is_never_sent_twice(corpus, prolific):
    batch = publish_study(corpus, prolific)
    annotator = qualify(Annotator.objects.create(provider="prolific", external_id=GOOD))
    response = arrive(batch, GOOD)
    assert response.status_code == 302
    claim = Assignment.objects.get(annotator=annotator).crowd_claim
    claim.verified = True
    claim.save()
    decision = Decision.objects.create(project=corpus, annotator=annotator, kind="bonus", amount_usd=Decimal("1.00"),
                                       idempotency_key="bonus:test:1",
                                       provider_response={"bulk_id": "60f6c0ffee0000000000b001", "pay_sent": True})
    assert outbox.execute_decision(decision.pk) == "failed"
    assert not prolific.calls(path="/api/v1/bulk-bonus-payments/60f6c0ffee0000000000b001/pay/")
    assert "not idempotent" in Decision.objects.get(pk=decision.pk).last_error
    assert not LedgerEntry.objects.exists()


def test_a_participant_of_another_study_is_refused(corpus, prolific):
    batch = publish_study(corpus, prolific)
    response = Client().get(reverse("crowd_prolific_entry", args=[batch.public_id]), {
        "PROLIFIC_PID": GOOD, "STUDY_ID": "60f6acb180a5ff0e2f2eFFFF", "SESSION_ID": SESSIONS[GOOD]})
    assert response.status_code == 403 and not Assignment.objects.exists()


def test_server_errors_are_transient_and_client_errors_are_not(corpus, prolific):
    from annotation.crowd.base import ProviderError, ProviderTransientError

    provider = ProlificProvider()
    prolific.route("GET", "/api/v1/studies/broken/", None, 503)
    with pytest.raises(ProviderTransientError):
        provider.call("GET", "/api/v1/studies/broken/")
    with pytest.raises(ProviderError) as refused:
        provider.call("GET", "/api/v1/studies/missing/")
    assert refused.value.code == "404" and not isinstance(refused.value, ProviderTransientError)
    assert CrowdBatch.objects.count() == 0


def verified_submission(corpus, prolific, participant=CARELESS):
    batch = publish_study(corpus, prolific)
    annotator = qualify(Annotator.objects.create(provider="prolific", external_id=participant))
    assert arrive(batch, participant).status_code == 302
    assignment = Assignment.objects.get(annotator=annotator)
    Assignment.objects.filter(pk=assignment.pk).update(status="submitted", submitted_at=timezone.now())
    CrowdClaim.objects.filter(assignment=assignment).update(verified=True)
    corpus.block_after_failures = 5
    corpus.save()
    return batch, Assignment.objects.get(pk=assignment.pk)


def test_an_approval_after_a_sent_rejection_reverses_it_first(corpus, prolific, manager):
    from annotation.quality.policy import grade_and_apply_policy
    from annotation.services.grades import grade_override

    batch, assignment = verified_submission(corpus, prolific)
    transition = f"/api/v1/submissions/{SESSIONS[CARELESS]}/transition/"
    prolific.route("POST", transition, "submission_rejected.json")
    grade = grade_and_apply_policy(assignment)  # no answers: the checks fail, the submission is rejected
    assert outbox.execute_pending(corpus) == {"done": 2}  # the rejection, and the place it frees (no call)
    assert [call.body["action"] for call in prolific.calls("POST", transition)] == ["REJECT"]

    grade_override(grade=grade, passed=True, reason="The checks were misread.", user=manager)
    prolific.route("GET", f"/api/v1/submissions/{SESSIONS[CARELESS]}/", "submission_rejected.json")
    prolific.route("POST", transition, "submission_approved.json")
    assert outbox.execute_pending(corpus) == {"done": 1}

    # Reversed (back to AWAITING REVIEW), then approved; the reward is paid once.
    assert [call.body["action"] for call in prolific.calls("POST", transition)] == ["REJECT", "UNREJECT", "APPROVE"]
    approve = Decision.objects.get(kind="approve")
    assert approve.status == "done" and approve.provider_response["reversed_rejection"] is True
    fee = (batch.reward_usd * Decimal("0.333")).quantize(Decimal("0.01"))
    assert outbox.spend(corpus)["total"] == batch.reward_usd + fee
    assert LedgerEntry.objects.filter(kind="reward").count() == 1


def test_a_rejection_prolific_will_not_reverse_fails_for_a_person(corpus, prolific, manager):
    from annotation.quality.policy import grade_and_apply_policy
    from annotation.services.grades import grade_override

    batch, assignment = verified_submission(corpus, prolific)
    transition = f"/api/v1/submissions/{SESSIONS[CARELESS]}/transition/"
    prolific.route("POST", transition, "submission_rejected.json")
    grade = grade_and_apply_policy(assignment)
    outbox.execute_pending(corpus)
    grade_override(grade=grade, passed=True, reason="The checks were misread.", user=manager)
    prolific.route("GET", f"/api/v1/submissions/{SESSIONS[CARELESS]}/", "submission_rejected.json")
    prolific.route("POST", transition, None, 400)  # e.g. not enough funds to approve

    assert outbox.execute_pending(corpus) == {"failed": 1}

    approve = Decision.objects.get(kind="approve")
    assert "Reverse it in Prolific's web app" in approve.last_error and "rejection_not_reversed" in approve.last_error
    assert [call.body["action"] for call in prolific.calls("POST", transition)] == ["REJECT", "UNREJECT"]
    assert not LedgerEntry.objects.exists()


def test_messages_name_the_study_they_are_about(corpus, prolific):
    batch, _ = verified_submission(corpus, prolific, participant=GOOD)
    prolific.route("POST", "/api/v1/messages/bulk/", None, 204)

    result = ProlificProvider().notify(worker_ids=[GOOD, CARELESS], subject="New HITs", message="Hello")

    assert [call.body for call in prolific.calls("POST", "/api/v1/messages/bulk/")] == [
        {"ids": [GOOD], "body": "New HITs\n\nHello", "study_id": STUDY}]
    assert result["sent"] == 1 and [failure["worker_id"] for failure in result["failures"]] == [CARELESS]


def test_publishing_needs_the_workspace_of_the_blocklist(corpus, settings):
    settings.FINEGRAIN_PROLIFIC_WORKSPACE_ID = ""
    plan = plan_publish(project=corpus, task="fv", provider="prolific")
    assert any("no Prolific workspace yet" in problem for problem in plan.problems)
    assert not any("FINEGRAIN_" in problem for problem in plan.problems)  # The page names no environment variable.
    with pytest.raises(ValueError):
        publish(plan=plan, provider=ProlificProvider())


def test_a_participant_who_passes_the_screening_lands_on_their_hit(corpus, prolific):
    from annotation.quality.qualification import QUESTIONS

    batch = publish_study(corpus, prolific)
    browser = Client(enforce_csrf_checks=True)
    screening = arrive(batch, GOOD)["Location"]
    assert reverse("work_screening", args=[corpus.slug]) in screening
    assert not Assignment.objects.exists()
    page = browser.get(screening)
    assert page.status_code == 200 and b"your first HIT opens" in page.content
    passed = browser.post(screening, {**{question.key: question.answer for question in QUESTIONS},
                                      "csrfmiddlewaretoken": browser.cookies["csrftoken"].value})
    # Straight on to the study's HIT, claimed for this very Prolific session (checked with Prolific again).
    claim = CrowdClaim.objects.get(external_assignment_id=SESSIONS[GOOD])
    assert (claim.batch, claim.worker_id, claim.assignment.hit.task) == (batch, GOOD, "fv")
    assert passed.status_code == 302 and passed["Location"].startswith(
        reverse("hit_page", args=[claim.assignment.public_id]) + "?ct=")
    assert len(prolific.calls("GET", f"/api/v1/submissions/{SESSIONS[GOOD]}/")) == 2
    hit_page = Client().get(passed["Location"])
    assert hit_page.status_code == 200 and b'id="answers"' in hit_page.content
    # Submitting it ends on Prolific's completion page, as for a participant screened before.
    token = parse_qs(urlsplit(passed["Location"]).query)["ct"][0]
    submitted = Client(enforce_csrf_checks=True).post(
        reverse("hit_submit", args=[claim.assignment.public_id]),
        {**form_for(claim.assignment, passing=True), "crowd_token": token})
    done = Client().get(submitted["Location"])
    assert f"https://app.prolific.com/submissions/complete?cc={batch.completion_code}".encode() in done.content


def test_a_participant_whose_session_ended_during_the_screening_gets_no_hit(corpus, prolific):
    from annotation.quality.qualification import QUESTIONS

    batch = publish_study(corpus, prolific)
    browser = Client()
    screening = arrive(batch, GOOD)["Location"]
    # Prolific now reports the session as returned: it holds no place in the study any more.
    prolific.route("GET", f"/api/v1/submissions/{SESSIONS[GOOD]}/", "submission_returned.json")
    passed = browser.post(screening, {question.key: question.answer for question in QUESTIONS})
    assert passed.status_code == 403 and b"holds no place in the study" in passed.content
    assert not Assignment.objects.exists()


def test_prolific_has_no_sandbox_and_its_dry_run_says_what_is_real(corpus, prolific):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="Prolific has no sandbox .*Leave out --sandbox"):
        call_command("publish", project=corpus.slug, task="fv", provider="prolific", sandbox=True, dry_run=True,
                     stdout=StringIO(), stderr=StringIO())
    out = StringIO()
    call_command("publish", project=corpus.slug, task="fv", provider="prolific", dry_run=True, stdout=out,
                 stderr=StringIO())
    text = out.getvalue()
    assert "sandbox" not in text and "nothing is paid" not in text
    assert "Dry run: nothing was sent to Prolific and nothing was created." in text
    assert not prolific.requests and not CrowdBatch.objects.exists()
    # The plan refuses the sandbox flag for Prolific whoever asks: it would publish a real, paid study.
    plan = plan_publish(project=corpus, task="fv", provider="prolific", sandbox=True)
    assert any("Prolific has no sandbox" in problem for problem in plan.problems)
