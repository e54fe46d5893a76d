"""The forged-worker scenario, end to end (MTurk through botocore's Stubber, Prolific through the recorded loopback
server). Worker ids are not secrets: somebody arrives with a victim's MTurk workerId or PROLIFIC_PID and a made-up
assignment or session, fails the attention checks on purpose, and a made-up (or borrowed) identity submits passing
work. Until the provider confirms them, and after it says it does not know them:

- the victim is untouched, here (status in the project, decisions, screening attempts) and on the provider (no
  rejection, no block: a Stubber or a loopback server that is not told to expect a call refuses it);
- the forged work never counts (N, aggregation and exports read the one counted-submission rule), and sync discards
  it with the reason, keeping it for audit;
- the place it took is back for real workers within the provider's own bound: at once on MTurk, which holds its own
  places; on Prolific after the study's maximum time (the project's reservation time), as Prolific would time out an
  abandoned session, even before any sync.
"""

from datetime import timedelta
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
from botocore.stub import ANY
from django.db.models import F
from django.test import Client
from django.urls import reverse

from annotation.crowd.publishing import plan_publish, publish
from annotation.crowd.sync import sync_project
from annotation.models import Annotator, Assignment, Decision, Label
from annotation.quality.dashboard import project_quality
from exports.selectors import check_labels, counted_labels
from tests.crowd.conftest import form_for
from tests.crowd.prolific_server import ProlificServer, start
from tests.crowd.stubs import assignment as remote
from tests.crowd.stubs import expect_create_hit, expect_hit_type, expect_qualification_types, mturk_id
from tests.crowd.test_prolific import CARELESS, GOOD, SESSIONS, STUDY, publish_study
from tests.work import qualify

pytestmark = pytest.mark.django_db
SANDBOX = "https://workersandbox.mturk.com"
VICTIM, REAL, MADE_UP = "A1VICTIMWORKER", "A2REALWORKER", "A9MADEUPWORKER"
FORGED = ["3FORGEDASSIGNMENT0000000000001", "3FORGEDASSIGNMENT0000000000002"]


def time_passes(minutes: int) -> None:
    """The clock moves on: every reservation started `minutes` earlier (the tests never touch the real clock)."""
    delta = timedelta(minutes=minutes)
    Assignment.objects.update(reserved_at=F("reserved_at") - delta, expires_at=F("expires_at") - delta)


def token_of(response) -> str:
    return parse_qs(urlsplit(response["Location"]).query)["ct"][0]


def submit(response, *, passing: bool) -> Assignment:
    """Answer the HIT the arrival was sent to, with the session token only (no cookies), and submit it."""
    assert response.status_code == 302 and "/work/hits/" in response["Location"], response.content[:300]
    token = token_of(response)
    assignment = Assignment.objects.get(public_id=response["Location"].split("/work/hits/")[1].split("/")[0])
    done = Client(enforce_csrf_checks=True).post(reverse("hit_submit", args=[assignment.public_id]),
                                                 {**form_for(assignment, passing=passing), "crowd_token": token})
    assert done.status_code == 302, done.content[:300]
    return Assignment.objects.get(pk=assignment.pk)


# --- MTurk

def mturk_arrival(batch, hit_id: str, worker: str, assignment_id: str):
    return Client().get(reverse("crowd_mturk_entry", args=[batch.public_id]), {
        "assignmentId": assignment_id, "hitId": hit_id, "workerId": worker, "turkSubmitTo": SANDBOX})


def publish_one_place_per_hit(corpus, provider, stubber):
    expect_qualification_types(stubber)
    hit_type = expect_hit_type(stubber)
    plan = plan_publish(project=corpus, task="fv", provider="mturk", sandbox=True)
    hit_ids = [mturk_id("3HIT", n) for n in range(len(plan.items))]
    for hit_id in hit_ids:
        expect_create_hit(stubber, hit_id, hit_type, max_assignments=1)
    return publish(plan=plan, provider=provider), hit_ids


def expect_listing(stubber, hit_ids, listed: dict):
    for hit_id in hit_ids:
        items = listed.get(hit_id, [])
        stubber.add_response("list_assignments_for_hit", {"Assignments": items, "NumResults": len(items)},
                             {"HITId": hit_id, "MaxResults": 100, "AssignmentStatuses": ANY})


def test_it_forged_mturk_arrivals_leave_the_victim_untouched_count_nothing_and_keep_nobody_out(corpus, mturk):
    provider, stubber = mturk
    providers = {("mturk", True): provider}
    # One failed submission blocks; each HIT has one place.
    corpus.annotators_per_unit, corpus.block_after_failures, corpus.bonus_usd = 1, 1, Decimal("0.00")
    corpus.save()
    batch, hit_ids = publish_one_place_per_hit(corpus, provider, stubber)

    # The victim's own, real work on the first HIT, confirmed by MTurk: a verified claim on another HIT is what a
    # block used to fall back on.
    real = submit(mturk_arrival(batch, hit_ids[0], VICTIM, mturk_id("3ASG", 0)), passing=True)
    expect_listing(stubber, hit_ids, {hit_ids[0]: [remote(mturk_id("3ASG", 0), hit_ids[0], VICTIM)]})
    stubber.add_response("approve_assignment", {}, {"AssignmentId": mturk_id("3ASG", 0), "RequesterFeedback": ANY})
    assert sync_project(corpus, providers=providers).decisions == {"done": 1}
    victim = Annotator.objects.get(external_id=VICTIM)
    decided_before = set(Decision.objects.values_list("pk", flat=True))

    # 1. The victim's workerId, a made-up assignmentId, every check failed on purpose.
    failed = submit(mturk_arrival(batch, hit_ids[1], VICTIM, FORGED[0]), passing=False)
    assert failed.grade.passed is False  # graded at submit...
    assert failed.confirmed_at is None  # ...but only a claim: no decision, no block, here or on MTurk
    assert set(Decision.objects.values_list("pk", flat=True)) == decided_before
    assert victim.status_in(corpus) == Annotator.Status.ACTIVE

    # 2. A made-up worker takes the one place of the third HIT and submits passing work; a real worker MTurk sends
    # to that HIT is let in at once: MTurk holds its own places, so an unconfirmed arrival keeps nobody out.
    forged_arrival = mturk_arrival(batch, hit_ids[2], MADE_UP, FORGED[1])
    forged, forged_token = submit(forged_arrival, passing=True), token_of(forged_arrival)
    arrival = mturk_arrival(batch, hit_ids[2], REAL, mturk_id("3ASG", 3))
    assert arrival.status_code == 302, arrival.content[:300]
    later = submit(arrival, passing=True)
    assert forged.hit == later.hit
    # Nothing forged counts: toward N, in aggregation and exports (labels, and the attention-check outcomes).
    assert list(Assignment.objects.counted()) == [real]
    assert not counted_labels(corpus).filter(assignment__in=[failed, forged]).exists()
    assert not check_labels(corpus).filter(assignment__in=[failed, forged]).exists()
    assert not Decision.objects.filter(annotator__external_id=MADE_UP).exists()

    # 3. MTurk's assignment duration runs out (no worker can submit those assignments to MTurk any more); sync lists
    # what MTurk has, asks about the two claims it does not list, and sets them aside.
    time_passes(corpus.reservation_minutes + 1)
    expect_listing(stubber, hit_ids, {hit_ids[0]: [remote(mturk_id("3ASG", 0), hit_ids[0], VICTIM, "Approved")],
                                      hit_ids[2]: [remote(mturk_id("3ASG", 3), hit_ids[2], REAL)]})
    for assignment_id in FORGED:
        stubber.add_client_error("get_assignment", service_error_code="RequestError", http_status_code=400,
                                 service_message=f"Assignment {assignment_id} does not exist. (1732190400000)",
                                 expected_params={"AssignmentId": assignment_id})
    stubber.add_response("approve_assignment", {}, {"AssignmentId": mturk_id("3ASG", 3), "RequesterFeedback": ANY})
    result = sync_project(corpus, providers=providers)
    stubber.assert_no_pending_responses()  # and no call beyond these: no rejection, no block of anybody

    assert result.discarded == FORGED and result.flagged == [] and result.decisions == {"done": 1}
    # The victim: active, one decision (the approval of their real work), nothing sent to MTurk about them since.
    assert victim.status_in(corpus) == Annotator.Status.ACTIVE
    assert [d.kind for d in Decision.objects.filter(annotator=victim)] == ["approve"]
    assert not Decision.objects.filter(kind__in=["reject", "block", "extend", "bonus"]).exists()
    assert [row.submissions for row in project_quality(corpus, [victim]).rows] == [1]
    # The forged work: kept for audit with the reason, never counted, holding no place.
    for assignment in (failed, forged):
        assignment.refresh_from_db()
        assert assignment.status == Assignment.Status.DISCARDED
        assert "has no assignment" in assignment.discarded_reason
        assert Label.objects.filter(assignment=assignment).exists()
    # The forger's session can no longer reach the HIT it claimed.
    assert Client().get(reverse("hit_page", args=[forged.public_id]), {"ct": forged_token}).status_code == 410
    assert set(Assignment.objects.counted()) == {real, later}
    assert list(Assignment.objects.holding_a_place().filter(hit=later.hit)) == [later]
    assert not counted_labels(corpus).filter(assignment__in=[failed, forged]).exists()


# --- Prolific

@pytest.fixture
def prolific(settings):
    state = ProlificServer()
    httpd = start(state)
    settings.FINEGRAIN_PROLIFIC_API_URL = state.url
    yield state
    httpd.shutdown()
    httpd.server_close()


def prolific_arrival(batch, participant: str, session: str):
    return Client().get(reverse("crowd_prolific_entry", args=[batch.public_id]), {
        "PROLIFIC_PID": participant, "STUDY_ID": STUDY, "SESSION_ID": session})


VICTIM_2, UNSCREENED = "5f1e0000000000000000cccc", "5f1e0000000000000000eeee"
MADE_UP_SESSIONS = ["60f6b2c1d4e5f6a7b8c9f001", "60f6b2c1d4e5f6a7b8c9f002", "60f6b2c1d4e5f6a7b8c9f003"]


def test_it_forged_prolific_arrivals_leave_the_victim_untouched_count_nothing_and_free_the_place(corpus, prolific):
    # Two HITs with one place each; one failed submission blocks.
    keep = list(corpus.hits.filter(task="fv").order_by("position").values_list("pk", flat=True)[:2])
    corpus.hits.filter(task="fv").exclude(pk__in=keep).delete()
    corpus.annotators_per_unit, corpus.block_after_failures, corpus.bonus_usd = 1, 1, Decimal("0.00")
    corpus.save()
    batch = publish_study(corpus, prolific)
    victim, victim_2, late = (qualify(Annotator.objects.create(provider="prolific", external_id=participant), corpus)
                              for participant in (GOOD, VICTIM_2, CARELESS))
    unscreened = Annotator.objects.create(provider="prolific", external_id=UNSCREENED)

    # The victim's own work, its session confirmed by Prolific on arrival: it counts.
    real = submit(prolific_arrival(batch, GOOD, SESSIONS[GOOD]), passing=True)
    assert real.confirmed_at is not None and list(Assignment.objects.counted()) == [real]

    # 1. The victim's PROLIFIC_PID with a made-up session: Prolific does not know it, so nothing is reserved; nor
    # can a forged PROLIFIC_PID use up the screening attempts of somebody who has not taken the test yet.
    assert prolific_arrival(batch, GOOD, MADE_UP_SESSIONS[0]).status_code == 403
    assert prolific_arrival(batch, UNSCREENED, MADE_UP_SESSIONS[0]).status_code == 403
    assert prolific_arrival(batch, "5f1e00000000000000000404", MADE_UP_SESSIONS[0]).status_code == 403
    assert not Annotator.objects.filter(external_id="5f1e00000000000000000404").exists()  # nothing left behind
    for session in MADE_UP_SESSIONS[1:]:  # Prolific cannot be reached when the next two arrive
        prolific.route("GET", f"/api/v1/submissions/{session}/", None, 503)
    refused = prolific_arrival(batch, UNSCREENED, MADE_UP_SESSIONS[1])
    assert refused.status_code == 503 and b"reload this page" in refused.content
    assert unscreened.standing_in(corpus).screening_attempts == 0 and Assignment.objects.count() == 1

    # 2. While Prolific is unreachable the claims are let in, unconfirmed: the victim's PID fails every check on
    # purpose, a second victim's PID submits passing work on the last place of the study.
    failed = submit(prolific_arrival(batch, GOOD, MADE_UP_SESSIONS[1]), passing=False)
    forged = submit(prolific_arrival(batch, VICTIM_2, MADE_UP_SESSIONS[2]), passing=True)
    assert failed.confirmed_at is None and forged.confirmed_at is None and failed.grade.passed is False
    assert not Decision.objects.exclude(assignment=real).exists()
    assert victim.status_in(corpus) == victim_2.status_in(corpus) == Annotator.Status.ACTIVE
    assert list(Assignment.objects.counted()) == [real]
    assert not counted_labels(corpus).filter(assignment__in=[failed, forged]).exists()

    # 3. A real participant arrives: the unconfirmed passing submission holds the last place as long as Prolific
    # would hold it for an active session (the study's maximum time, the project's reservation time), no longer.
    assert b"Every HIT of this study is taken" in prolific_arrival(batch, CARELESS, SESSIONS[CARELESS]).content
    time_passes(corpus.reservation_minutes + 1)
    later = submit(prolific_arrival(batch, CARELESS, SESSIONS[CARELESS]), passing=True)
    assert later.hit == forged.hit and later.confirmed_at is not None

    # 4. Sync: Prolific lists the two real submissions, and does not know the two made-up sessions.
    for session in MADE_UP_SESSIONS[1:]:
        prolific.route("GET", f"/api/v1/submissions/{session}/", None, 404)
    prolific.route("GET", f"/api/v1/studies/{STUDY}/submissions/", "submissions_page_1.json")
    prolific.route("GET", f"/api/v1/studies/{STUDY}/submissions/?page=2", "submissions_page_2.json")
    for participant in (GOOD, CARELESS):
        prolific.route("POST", f"/api/v1/submissions/{SESSIONS[participant]}/transition/",
                       "submission_approved.json")
    result = sync_project(corpus)

    assert result.discarded == MADE_UP_SESSIONS[1:] and result.decisions == {"done": 2}
    # The victims: active, never rejected, never added to the study's blocklist group on Prolific.
    assert victim.status_in(corpus) == victim_2.status_in(corpus) == Annotator.Status.ACTIVE
    assert not prolific.calls("POST", "/api/v1/participant-groups/651d4f3c2d1b4a0012345678/participants/")
    assert [call.path for call in prolific.calls("POST") if "/submissions/" in call.path] == [
        f"/api/v1/submissions/{SESSIONS[participant]}/transition/" for participant in (GOOD, CARELESS)]
    assert sorted(Decision.objects.values_list("kind", "annotator__external_id")) == [
        ("approve", GOOD), ("approve", CARELESS)]
    # The forged work: discarded with the reason, kept, never counted; each HIT counts exactly N real submissions.
    for assignment in (failed, forged):
        assignment.refresh_from_db()
        assert assignment.status == Assignment.Status.DISCARDED and "has no submission" in assignment.discarded_reason
    assert set(Assignment.objects.counted()) == {real, later}
    assert not counted_labels(corpus).filter(assignment__in=[failed, forged]).exists()
