"""Crowd work collected round by round: a publication asks the first round's places only, and the top-up job releases
the HITs it builds to the live batch of their task, once: new MTurk HITs paid for their size, more places in the
Prolific study, the private links' own pool; never past the budget, never to a previous labeller. MTurk and Prolific
are the loopback servers (tests/crowd/mturk_server.py, prolific_server.py): the real clients run, nothing leaves the
machine."""

import json
from decimal import Decimal
from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.urls import reverse

from annotation.crowd import topups as crowd_topups
from annotation.crowd.links import link_annotator, link_create, link_token
from annotation.crowd.mturk import MTurkProvider
from annotation.crowd.prolific import ProlificProvider
from annotation.crowd.publishing import plan_publish, publish, reward_for
from annotation.models import Annotator, CrowdBatch, CrowdHit, Hit, UnitState
from annotation.redundancy import Verdict
from annotation.services.answers import save_answers
from annotation.services.assignment import reserve_next_hit, submit_assignment
from annotation.services.topups import topups_build, topups_run
from corpus.models import Job, RedundancyPolicy
from tests.crowd import mturk_server
from tests.crowd.prolific_server import ProlificServer, start
from tests.crowd.test_prolific import SESSIONS, STUDY, publish_study
from tests.work import build_all, first_round_hit, import_small, passing, qualify, work_next_hit

pytestmark = pytest.mark.django_db
GOOD = "5f1e0000000000000000aaaa"  # the participant of tests/fixtures/prolific/submission_active.json


@pytest.fixture(autouse=True)
def in_process(settings):
    # Releases run in this process, as without crowd workers (publishing.publishing_is_queued).
    settings.FINEGRAIN_EMBEDDED_BROKER = True


@pytest.fixture
def corpus(project):
    """The small corpus with its HITs and their attention checks as the builds inject them."""
    import_small(project)
    build_all(project)
    return project


@pytest.fixture
def fake_mturk(settings, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    state = mturk_server.FakeMTurk()
    httpd = mturk_server.start(state)
    settings.FINEGRAIN_MTURK_SANDBOX_ENDPOINT = state.url
    settings.FINEGRAIN_MTURK_MAX_ATTEMPTS = 0  # retries beyond the first call: a lost answer reaches our code
    yield state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def prolific(settings):
    state = ProlificServer(tracks_places=True)
    httpd = start(state)
    settings.FINEGRAIN_PROLIFIC_API_URL = state.url
    yield state
    httpd.shutdown()
    httpd.server_close()


def collects(project, policy=RedundancyPolicy.ADAPTIVE):
    project.redundancy_policy = policy
    project.save(update_fields=["redundancy_policy"])
    return project


def split_first_hit(project, provider="mturk"):
    """Two annotators label the first FV HIT and split on its first real unit, which now wants more labels."""
    hit = first_round_hit(project, "fv")
    unit = hit.units.filter(attention_check__isnull=True).order_by("position").first()
    first, second = (qualify(Annotator.objects.create(provider=provider, external_id=name), project)
                     for name in ("A1FIRST", "A2SECOND"))
    work_next_hit(first, project, "fv")
    work_next_hit(second, project, "fv", split=unit)
    assert UnitState.objects.get(unit=unit).verdict == Verdict.NEEDS_MORE
    return first, second, unit


def run_topup_job(project, capture):
    job = Job.objects.create(kind="topups", project=project)
    with capture(execute=True):
        topups_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    return job


def publish_on_mturk(project):
    plan = plan_publish(project=project, task="fv", provider="mturk", sandbox=True)
    return plan, publish(plan=plan, provider=MTurkProvider(sandbox=True))


def creates(fake):
    return [body for name, body in fake.calls if name == "CreateHITWithHITType"]


# --- The first round

def test_mturk_gets_the_first_rounds_places_only(corpus, fake_mturk):
    collects(corpus)
    plan, batch = publish_on_mturk(corpus)
    assert [body["MaxAssignments"] for body in creates(fake_mturk)] == [2, 2, 2, 2]  # adaptive N = 3: two first
    assert plan.estimate.assignments == 8 and batch.assignments_per_hit == 2
    assert "first round's 2 annotators, not 3" in plan.places_note
    assert "MaxAssignments=2 " in "\n".join(MTurkProvider(sandbox=True).describe(plan))


def test_a_prolific_study_opens_the_first_rounds_places_only(corpus, prolific):
    collects(corpus)
    publish_study(corpus, prolific)
    assert prolific.calls("POST", "/api/v1/studies/")[0].body["total_available_places"] == 8


def test_the_dry_run_page_says_the_places_are_the_first_rounds(corpus, manager, annotator, client):
    collects(corpus)
    client.force_login(manager)
    page = client.get(reverse("crowd_publish", args=[corpus.slug]), {"task": "fv", "provider": "prolific"})
    assert page.status_code == 200
    assert b"4 HITs \xc3\x97 2 assignments = 8 assignments" in page.content
    assert b"first round&#x27;s 2 annotators, not 3" in page.content
    client.force_login(annotator)
    assert client.get(reverse("crowd_publish", args=[corpus.slug]), {"task": "fv", "provider": "prolific"}
                      ).status_code in (403, 404)


def test_the_fixed_design_still_asks_n(corpus, fake_mturk):
    plan, _ = publish_on_mturk(corpus)
    assert {body["MaxAssignments"] for body in creates(fake_mturk)} == {3} and plan.estimate.assignments == 12


# --- MTurk: a new HIT per top-up HIT, paid for its size

def test_the_top_up_job_puts_a_new_mturk_hit_out_paid_for_its_size(corpus, fake_mturk, django_capture_on_commit_callbacks):
    collects(corpus)
    _, live = publish_on_mturk(corpus)
    split_first_hit(corpus)
    run_topup_job(corpus, django_capture_on_commit_callbacks)

    topup = Hit.objects.get(project=corpus, round=1)
    batch = CrowdBatch.objects.get(estimate__topups_of=str(live.public_id))
    created = creates(fake_mturk)[4:]
    assert len(created) == 1 and created[0]["MaxAssignments"] == topup.places == 1
    assert created[0]["HITTypeId"] == batch.external_id and str(batch.public_id) in created[0]["Question"]
    reward = reward_for(corpus, [topup.units.count()])
    assert batch.reward_usd == reward < live.reward_usd  # a few units, not the average first-round HIT
    hit_types = [body for name, body in fake_mturk.calls if name == "CreateHITType"]
    assert hit_types[-1]["Reward"] == f"{reward:.2f}"
    assert batch.status == "published" and batch.assignments_per_hit == 1
    assert CrowdHit.objects.get(batch=batch).hit == topup


def test_top_ups_built_before_the_first_publication_go_out_after_it_paid_for_their_size(
        corpus, fake_mturk, django_capture_on_commit_callbacks):
    """Items left undecided by annotators who came before the crowd (in-house, a private link): the publication asks
    the first round only, at the first round's reward, and the waiting top-up HIT follows it at its own reward."""
    collects(corpus)
    split_first_hit(corpus)
    topups_build(corpus)
    topup = Hit.objects.get(project=corpus, round=1)

    plan = plan_publish(project=corpus, task="fv", provider="mturk", sandbox=True)
    assert topup.pk not in [item.hit_id for item in plan.items] and len(plan.items) == 4
    assert "1 top-up HIT already built goes out right after this publication" in plan.places_note
    with django_capture_on_commit_callbacks(execute=True):
        live = publish(plan=plan, provider=MTurkProvider(sandbox=True))

    created = creates(fake_mturk)
    assert [body["MaxAssignments"] for body in created] == [2, 2, 2, 2, topup.places]
    batch = CrowdBatch.objects.get(estimate__topups_of=str(live.public_id))
    assert CrowdHit.objects.get(batch=batch).hit == topup and batch.status == "published"
    assert batch.reward_usd == reward_for(corpus, [topup.units.count()]) < live.reward_usd
    assert live.crowd_hits.count() == 4 and not live.crowd_hits.filter(hit=topup).exists()


def test_a_rerun_and_a_lost_answer_create_no_mturk_hit_twice(corpus, fake_mturk, django_capture_on_commit_callbacks):
    collects(corpus)
    publish_on_mturk(corpus)
    split_first_hit(corpus)
    fake_mturk.lose_answers = {5}  # the top-up HIT is created, and MTurk's answer is lost on the way
    run_topup_job(corpus, django_capture_on_commit_callbacks)
    row = CrowdHit.objects.get(hit__round=1)
    assert row.published_at is None and fake_mturk.lost_answers == 1

    crowd_topups.crowd_hit_release(row.pk)  # the retry sends the same request token
    run_topup_job(corpus, django_capture_on_commit_callbacks)  # and the job runs again
    crowd_topups.release_topups(project=corpus)

    row.refresh_from_db()
    assert row.external_id and row.published_at is not None
    assert fake_mturk.refused_repeats == 1 and len(fake_mturk.hits) == 5  # four first-round HITs and one top-up
    assert CrowdHit.objects.filter(hit__round=1).count() == 1


def test_mturk_never_gets_a_top_up_hit_of_ten_assignments(corpus, fake_mturk):
    collects(corpus)
    publish_on_mturk(corpus)
    split_first_hit(corpus)
    topups_build(corpus)
    Hit.objects.filter(round=1).update(extra_places=9)  # ten places: MTurk's higher fee

    crowd_topups.release_topups(project=corpus)

    row = CrowdHit.objects.get(hit__round=1)
    assert row.failed_at is not None and "10 assignments" in row.last_error
    assert len(creates(fake_mturk)) == 4


def test_a_hits_reward_is_what_the_cost_page_values_its_labels_at(corpus, settings):
    """One rule for both: the project's pay for one item times the HIT's items, up to the next cent."""
    from annotation.services.costs import label_usd

    for wage, seconds in ((Decimal("10.88"), 30), (Decimal("15.00"), 45), (Decimal("7.25"), 20)):
        corpus.hourly_wage_usd, settings.FINEGRAIN_SECONDS_PER_UNIT = wage, seconds
        for units in range(1, 13):
            gap = reward_for(corpus, [units]) - units * label_usd(corpus)
            assert Decimal("0") <= gap < Decimal("0.01"), (wage, seconds, units)


# --- Prolific: places added to the study

def test_the_top_up_job_adds_the_hits_places_to_the_study(corpus, prolific, django_capture_on_commit_callbacks):
    collects(corpus, RedundancyPolicy.LEAD)  # a 1-1 split asks two labels at once
    publish_study(corpus, prolific)
    prolific.route("PATCH", f"/api/v1/studies/{STUDY}/", "study_places_added.json")
    split_first_hit(corpus, provider="prolific")
    run_topup_job(corpus, django_capture_on_commit_callbacks)

    topup = Hit.objects.get(project=corpus, round=1)
    assert topup.places == 2
    # The study had 12 places (study_get.json); two more.
    assert [call.body for call in prolific.calls("PATCH")] == [{"total_available_places": 14}]
    row = CrowdHit.objects.get(hit=topup)
    assert row.batch.external_id == STUDY and row.published_at is not None

    run_topup_job(corpus, django_capture_on_commit_callbacks)
    crowd_topups.release_topups(project=corpus)
    assert len(prolific.calls("PATCH")) == 1


def test_a_retry_after_prolific_took_the_places_adds_none(corpus, prolific, tmp_path,
                                                           django_capture_on_commit_callbacks):
    collects(corpus)
    publish_study(corpus, prolific)
    prolific.route("PATCH", f"/api/v1/studies/{STUDY}/", "study_places_added.json")
    split_first_hit(corpus, provider="prolific")
    run_topup_job(corpus, django_capture_on_commit_callbacks)
    row = CrowdHit.objects.get(hit__round=1)
    assert [call.body for call in prolific.calls("PATCH")] == [{"total_available_places": 13}]
    # A crash after Prolific took the new total, before it was recorded here.
    CrowdHit.objects.filter(pk=row.pk).update(published_at=None)

    assert crowd_topups.crowd_hit_release(row.pk) == "published"
    assert len(prolific.calls("PATCH")) == 1


def test_a_failed_submissions_place_waits_while_top_up_places_are_added(corpus, prolific,
                                                                      django_capture_on_commit_callbacks):
    from annotation.crowd.outbox import places_in_flight

    collects(corpus)
    live = publish_study(corpus, prolific)
    split_first_hit(corpus, provider="prolific")
    topups_build(corpus)
    with django_capture_on_commit_callbacks(execute=False):
        crowd_topups.release_topups(project=corpus)
    row = CrowdHit.objects.get(hit__round=1)
    CrowdHit.objects.filter(pk=row.pk).update(attempts=1)  # an attempt under way
    assert places_in_flight(live.pk)
    assert not places_in_flight(live.pk, besides=row.pk)


# --- Private links: the platform's own pool

def test_a_private_link_serves_the_top_up_hit(corpus, django_capture_on_commit_callbacks):
    collects(corpus)
    plan = plan_publish(project=corpus, task="fv", provider="link")
    live = publish(plan=plan)
    split_first_hit(corpus)
    run_topup_job(corpus, django_capture_on_commit_callbacks)

    topup = Hit.objects.get(project=corpus, round=1)
    row = CrowdHit.objects.get(hit=topup)
    assert row.batch == live and row.published_at is not None
    link = link_create(project=corpus, task="fv", label="Expert 3")
    qualify(link_annotator(link=link), corpus)
    response = Client().get(reverse("crowd_link", args=[link_token(link)]))
    assert response.status_code == 302
    assignment_id = urlsplit(response["Location"]).path.rstrip("/").split("/")[-1]
    assert str(topup.assignments.get().public_id) == assignment_id  # top-ups first


# --- The budget

def test_past_the_budget_no_top_up_is_released(corpus, fake_mturk, django_capture_on_commit_callbacks):
    collects(corpus)
    publish_on_mturk(corpus)
    split_first_hit(corpus)
    topups_build(corpus)  # built while the project had no budget
    corpus.budget_usd = Decimal("0.01")
    corpus.save(update_fields=["budget_usd"])

    run_topup_job(corpus, django_capture_on_commit_callbacks)

    assert not CrowdHit.objects.filter(hit__round=1).exists() and len(creates(fake_mturk)) == 4


def test_nothing_is_released_for_units_sent_to_review(corpus, fake_mturk):
    collects(corpus)
    publish_on_mturk(corpus)
    split_first_hit(corpus)
    topups_build(corpus)
    UnitState.objects.filter(verdict=Verdict.NEEDS_MORE).update(verdict=Verdict.ESCALATED)

    assert crowd_topups.release_topups(project=corpus) == []
    assert len(creates(fake_mturk)) == 4


# --- A previous labeller arrives

def fill_the_first_round(project, *names):
    """Annotators who take every first-round FV HIT still open, agreeing (no top-up exists yet)."""
    for name in names:
        worker = qualify(Annotator.objects.create(provider="mturk", external_id=name), project)
        while (assignment := reserve_next_hit(worker, project, "fv", confirmed=True)) is not None:
            save_answers(assignment=assignment, answers={unit: passing(unit, True)
                                                         for unit in assignment.hit.units.all()})
            submit_assignment(assignment=assignment)


def test_a_link_holder_who_labelled_the_items_is_told_why_nothing_is_left(corpus, django_capture_on_commit_callbacks):
    collects(corpus)
    publish(plan=plan_publish(project=corpus, task="fv", provider="link"))
    link = link_create(project=corpus, task="fv", label="Expert 1")
    holder = qualify(link_annotator(link=link), corpus)
    hit = first_round_hit(corpus, "fv")
    unit = hit.units.filter(attention_check__isnull=True).order_by("position").first()
    work_next_hit(holder, corpus, "fv")
    work_next_hit(qualify(Annotator.objects.create(provider="mturk", external_id="A2SECOND"), corpus), corpus, "fv",
                  split=unit)
    fill_the_first_round(corpus, "A3THIRD", "A4FOURTH")
    run_topup_job(corpus, django_capture_on_commit_callbacks)
    assert Hit.objects.filter(round=1).exists()

    response = Client().get(reverse("crowd_link", args=[link_token(link)]))

    assert response.status_code == 403
    assert b"hold items you have already labelled" in response.content
    assert b"labels must come from different people" in response.content


def test_a_prolific_participant_who_labelled_the_items_is_told_why(corpus, prolific, django_capture_on_commit_callbacks):
    collects(corpus)
    batch = publish_study(corpus, prolific)
    participant = qualify(Annotator.objects.create(provider="prolific", external_id=GOOD), corpus)
    hit = first_round_hit(corpus, "fv")
    unit = hit.units.filter(attention_check__isnull=True).order_by("position").first()
    work_next_hit(participant, corpus, "fv")
    work_next_hit(qualify(Annotator.objects.create(provider="mturk", external_id="A2SECOND"), corpus), corpus, "fv",
                  split=unit)
    fill_the_first_round(corpus, "A3THIRD", "A4FOURTH")
    prolific.route("PATCH", f"/api/v1/studies/{STUDY}/", "study_places_added.json")
    run_topup_job(corpus, django_capture_on_commit_callbacks)

    response = Client().get(reverse("crowd_prolific_entry", args=[batch.public_id]), {
        "PROLIFIC_PID": GOOD, "STUDY_ID": STUDY, "SESSION_ID": SESSIONS[GOOD]})

    assert response.status_code == 403
    assert b"The HITs this study still offers hold items you have already labelled" in response.content
    assert b"labels must come from different people" in response.content


def test_an_mturk_worker_who_labelled_the_items_is_told_why(corpus, fake_mturk, django_capture_on_commit_callbacks):
    collects(corpus)
    publish_on_mturk(corpus)
    first, _, _ = split_first_hit(corpus)
    run_topup_job(corpus, django_capture_on_commit_callbacks)
    row = CrowdHit.objects.get(hit__round=1)

    response = Client().get(reverse("crowd_mturk_entry", args=[row.batch.public_id]), {
        "assignmentId": "3ASG" + "0" * 25 + "9", "hitId": row.external_id, "workerId": first.external_id,
        "turkSubmitTo": "https://workersandbox.mturk.com"})

    assert response.status_code == 403
    assert b"already labelled an item of this HIT" in response.content
    assert b"labels must come from different people" in response.content


def test_the_loopback_study_keeps_the_places_it_was_given(prolific):
    """The server's own check: a study answers with the total its last accepted PATCH set."""
    prolific.route("GET", f"/api/v1/studies/{STUDY}/", "study_get.json")
    prolific.route("PATCH", f"/api/v1/studies/{STUDY}/", "study_places_added.json")
    client = ProlificProvider().client
    assert client.patch(f"/api/v1/studies/{STUDY}/", json={"total_available_places": 15}).status_code == 200
    assert json.loads(client.get(f"/api/v1/studies/{STUDY}/").content)["total_available_places"] == 15
