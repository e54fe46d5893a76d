"""The reviewer's list as a job tallies it (stored numbers, corpus.snapshots): the same units in the same order as the
live computation for every filter, shown with a button while nothing or an older list is stored (a page view starts
no job), followed while the job the button asked for runs, current after it, and a failed job shown with its error
and tried again only when asked."""

import itertools
from urllib.parse import quote

import pytest
from django.urls import reverse

from annotation.job_kinds import REVIEW_TALLY
from annotation.models import Annotator, Grade, SplitUnit
from annotation.selectors import agreement_summary, disagreements, split_units
from annotation.services.assignment import reserve_next_hit
from annotation.services.review import adjudicate
from corpus.models import Job, Membership, Snapshot
from corpus.snapshots import numbers_run, numbers_state
from exports.simulate import simulate_annotations
from tests.conftest import numbers_now
from tests.work import annotator_for, complete, import_generated

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("numbers_worker")]


@pytest.fixture
def simulated(project, django_user_model):
    """Four documents x two summarizers, every task labelled by three simulated annotators of middling accuracy
    (many split units, some even), plus: a submission that missed a check and counts, two adjudications, and a
    fourth annotator on one HIT."""
    import_generated(project, documents=4, summarizers=2, sentences=3)
    simulate_annotations(project=project, annotators=3, accuracy=0.6, seed=5)
    graded = disagreements(project, "fv").last().hit.assignments.first()
    Grade.objects.update_or_create(assignment=graded, defaults={"passed": False, "checks_total": 2,
                                                                "checks_failed": 1, "override_passed": True})
    reviewer = django_user_model.objects.create_user("rita")
    for task in ("fv", "ka"):
        unit = disagreements(project, task).first()
        adjudicate(unit=unit, reviewer=reviewer, answer="yes", error_types=["entity"], reason="seen")
    hit = project.hits.filter(task="kv").order_by("position").first()
    hit.extra_places = 1
    hit.save(update_fields=["extra_places"])
    complete(reserve_next_hit(annotator_for(django_user_model.objects.create_user("late")), project, "kv", confirmed=True), yes=False)
    return project


def filter_choices(project) -> list[dict]:
    annotators = list(Annotator.objects.filter(labels__unit__hit__project=project).distinct().order_by("pk"))
    choices = [{}, {"domain": "news"}, {"domain": "sport"}, {"summarizer": "model-0"}, {"summarizer": "model-1"},
               {"settled": "yes"}, {"settled": "no"}, {"checks": "missed"}, {"checks": "clean"},
               {"most_agreement": 0.5}, {"most_agreement": 0.67}, {"most_agreement": 0.75},
               {"domain": "sport", "settled": "no", "most_agreement": 0.67}]
    return choices + [{"annotator": person} for person in annotators] + [{"annotator": annotators[0],
                                                                         "checks": "clean"}]


def tally_is_current(project) -> bool:
    return numbers_state(project, REVIEW_TALLY).current


def status_url(project) -> str:
    return reverse("numbers_status", args=[project.slug, REVIEW_TALLY])


def polls(page: str, project) -> bool:
    return f'hx-get="{status_url(project)}?' in page


def update_url(project) -> str:
    return reverse("numbers_update", args=[project.slug, REVIEW_TALLY])


def tally_jobs(project):
    return Job.objects.filter(project=project, kind=REVIEW_TALLY)


def test_every_filter_gives_the_units_of_the_live_computation_in_its_order(simulated):
    assert numbers_now(simulated, REVIEW_TALLY).status == Job.Status.DONE
    pairs = numbers_state(simulated, REVIEW_TALLY).data["pairs"]
    assert SplitUnit.objects.filter(project=simulated).count() > 10
    for task, chosen in itertools.product(("fv", "kv", "ka"), filter_choices(simulated)):
        live = [(unit.pk, unit.majority) for unit in disagreements(simulated, task, **chosen)]
        stored = list(split_units(simulated, task, **chosen).values_list("unit_id", "majority"))
        assert [pk for pk, _ in stored] == [pk for pk, _ in live], (task, chosen)
        assert [round(m, 6) for _, m in stored] == [round(float(m), 6) for _, m in live], (task, chosen)
    assert {task for task in ("fv", "kv", "ka") if disagreements(simulated, task, checks="missed").exists()} == {"fv"}
    for task in ("fv", "kv", "ka"):
        assert agreement_summary(simulated, task, among=pairs[task]) == agreement_summary(simulated, task)


def test_the_page_pages_through_the_units_of_the_live_computation(client, simulated, manager):
    client.force_login(manager)
    for task in ("fv", "ka"):
        live = [unit.public_id for unit in disagreements(simulated, task)]
        shown, number = [], 1
        while True:
            page = client.get(reverse("review", args=[simulated.slug]) + f"?task={task}&page={number}")
            shown += [card["unit"].public_id for card in page.context["cards"]]
            if not page.context["page"].has_next():
                break
            number += 1
        assert shown == live and f"{len(live)} units to review." in page.content.decode()


@pytest.mark.queued_numbers
def test_a_page_view_starts_no_job_and_the_button_starts_one(client, simulated, manager,
                                                             django_capture_on_commit_callbacks):
    url = reverse("review", args=[simulated.slug])
    client.force_login(manager)
    with django_capture_on_commit_callbacks() as queued:
        page = client.get(url).content.decode()
        client.get(url)
    assert "Not computed yet:" in page and "units to review" not in page
    assert f'action="{update_url(simulated)}"' in page and "Compute the reviewer&#x27;s list" in page
    assert not polls(page, simulated)  # nothing to follow
    assert not tally_jobs(simulated).exists() and queued == []
    with django_capture_on_commit_callbacks() as queued:
        response = client.post(update_url(simulated), {"variant": "", "next": url})
    assert response.status_code == 302 and response.url == url
    job = tally_jobs(simulated).get()
    assert job.status == Job.Status.QUEUED and len(queued) == 1
    with django_capture_on_commit_callbacks() as queued:
        assert client.post(update_url(simulated), {"variant": "", "next": url}).status_code == 302
    assert tally_jobs(simulated).count() == 1 and queued == []  # the open job, not another
    page = client.get(url).content.decode()
    assert "Computing the reviewer&#x27;s list" in page and f'hx-get="{status_url(simulated)}?variant=&amp;shown="' in page


@pytest.mark.queued_numbers
def test_new_labels_mark_the_list_out_of_date_until_the_job_has_tallied_them(client, simulated, manager,
                                                                            django_user_model,
                                                                            django_capture_on_commit_callbacks):
    url = reverse("review", args=[simulated.slug])
    client.force_login(manager)
    client.post(update_url(simulated), {"next": url})
    job = tally_jobs(simulated).get()
    polled = client.get(status_url(simulated), {"shown": ""}, headers={"HX-Request": "true"})
    assert polled.status_code == 200 and "Computing the reviewer&#x27;s list" in polled.content.decode()
    numbers_run(job_id=job.pk)
    # The page showed no list: it reloads (htmx) or is sent back to (a browser without htmx).
    status = client.get(status_url(simulated), {"shown": ""}, headers={"HX-Request": "true"})
    assert status.headers.get("HX-Refresh") == "true"
    assert client.get(status_url(simulated), {"shown": ""}).url == url
    page = client.get(url).content.decode()
    before = SplitUnit.objects.filter(project=simulated, task="fv").count()
    assert f"{before} units to review." in page and "Up to date:" in page and not polls(page, simulated)

    # One more annotator on an FV HIT: the stored list is shown as it was, marked older than the data, with the
    # button and without polling; a page view starts nothing.
    hit = simulated.hits.filter(task="fv").order_by("position").first()
    hit.extra_places = 1
    hit.save(update_fields=["extra_places"])
    complete(reserve_next_hit(annotator_for(django_user_model.objects.create_user("later")), simulated, "fv", confirmed=True),
             yes=True)
    with django_capture_on_commit_callbacks() as queued:
        page = client.get(url).content.decode()
    assert "Older than the data:" in page and f"{before} units to review." in page
    assert "Adjudications are shown as they are now." in page and "Update the reviewer&#x27;s list" in page
    assert not polls(page, simulated) and "Up to date" not in page
    assert not tally_is_current(simulated) and tally_jobs(simulated).count() == 1 and queued == []
    client.post(update_url(simulated), {"next": url})
    assert tally_jobs(simulated).count() == 2
    shown = numbers_state(simulated, REVIEW_TALLY).computed.isoformat()
    page = client.get(url).content.decode()
    assert "Updating the reviewer&#x27;s list." in page and f"{before} units to review." in page
    assert f'hx-get="{status_url(simulated)}?variant=&amp;shown={quote(shown, safe="/")}"' in page
    polled = client.get(status_url(simulated), {"shown": shown}, headers={"HX-Request": "true"})
    assert polled.status_code == 200 and "Updating the reviewer&#x27;s list." in polled.content.decode()
    numbers_run(job_id=tally_jobs(simulated).latest("pk").pk)
    # A reload would lose a reason being typed: the page that shows a list says a newer one is ready.
    polled = client.get(status_url(simulated), {"shown": shown}, headers={"HX-Request": "true"})
    assert polled.status_code == 286 and "HX-Refresh" not in polled.headers
    assert "Up to date again:" in polled.content.decode() and "Reload</a>" in polled.content.decode()
    page = client.get(url).content.decode()
    after = [unit.public_id for unit in disagreements(simulated, "fv")]
    assert "Up to date:" in page and "Older than the data" not in page
    assert f"{len(after)} unit{'s' if len(after) != 1 else ''} to review." in page


@pytest.mark.queued_numbers
def test_a_settled_unit_leaves_the_unsettled_list_at_once(client, simulated, manager):
    numbers_now(simulated, REVIEW_TALLY)
    client.force_login(manager)
    url = reverse("review", args=[simulated.slug]) + "?task=kv&settled=no"
    unit = client.get(url).context["cards"][0]["unit"]
    client.post(reverse("review_unit", args=[simulated.slug, unit.public_id]), {"answer": "no", "reason": "read"})
    page = client.get(url)
    assert unit not in [card["unit"] for card in page.context["cards"]]
    assert "Up to date:" in page.content.decode() and tally_jobs(simulated).count() == 1


@pytest.mark.queued_numbers
def test_a_failed_job_is_shown_with_its_error_and_tallied_again_on_request(client, simulated, manager, monkeypatch,
                                                                          django_capture_on_commit_callbacks):
    from annotation.services import review_tally

    def broken(project, task):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(review_tally, "_tally_task", broken)
    client.force_login(manager)
    url = reverse("review", args=[simulated.slug])
    client.post(update_url(simulated), {"next": url})
    job = tally_jobs(simulated).get()
    with pytest.raises(RuntimeError):
        numbers_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and not Snapshot.objects.filter(kind=REVIEW_TALLY).exists()
    with django_capture_on_commit_callbacks() as queued:
        page = client.get(url).content.decode()
        client.get(url)
    # The error in words; Python's text stays in the worker's log.
    assert "Could not compute the reviewer&#x27;s list" in page and "It stopped on an unexpected error" in page
    assert "the database went away" not in page and "Compute again" in page
    assert not polls(page, simulated)  # no polling of a failed job
    assert tally_jobs(simulated).count() == 1 and queued == []  # a page view does not retry it
    polled = client.get(status_url(simulated), headers={"HX-Request": "true"})
    assert polled.status_code == 286 and "Compute again" in polled.content.decode()
    monkeypatch.undo()
    assert client.post(update_url(simulated), {"next": url}).status_code == 302
    again = tally_jobs(simulated).latest("pk")
    assert again.pk != job.pk and again.status == Job.Status.QUEUED
    numbers_run(job_id=again.pk)
    assert tally_is_current(simulated)
    page = client.get(url).content.decode()
    assert "Up to date:" in page and "Could not compute" not in page


def test_only_managers_and_reviewers_see_or_ask_for_the_tally(client, simulated, annotator, other_annotator,
                                                               outsider, manager, django_user_model):
    assert client.get(status_url(simulated)).status_code == 302  # to the login page
    assert client.post(update_url(simulated)).status_code == 302
    assert not tally_jobs(simulated).exists()
    for user, status in ((annotator, 403), (other_annotator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(status_url(simulated)).status_code == status
        assert client.post(update_url(simulated)).status_code == status
    assert not tally_jobs(simulated).exists()
    reviewer = django_user_model.objects.create_user("ruby")
    Membership.objects.create(project=simulated, user=reviewer, role=Membership.Role.REVIEWER)
    for user in (reviewer, manager):
        client.force_login(user)
        assert client.post(update_url(simulated), {"next": "/"}).status_code == 302
        assert client.get(status_url(simulated), headers={"HX-Request": "true"}).status_code == 200  # followed
    assert tally_jobs(simulated).count() == 1 and tally_jobs(simulated).get().created_by == reviewer


def a_new_counted_submission(project, django_user_model):
    hit = project.hits.filter(task="fv").order_by("position").first()
    hit.extra_places = 1
    hit.save(update_fields=["extra_places"])
    complete(reserve_next_hit(annotator_for(django_user_model.objects.create_user("new")), project, "fv", confirmed=True))


def a_failed_grade(project, django_user_model):
    Grade.objects.update_or_create(assignment=first_submission(project),
                                   defaults={"passed": False, "checks_total": 1, "checks_failed": 1})


def an_override_to_fail(project, django_user_model):
    Grade.objects.update_or_create(assignment=first_submission(project),
                                   defaults={"passed": True, "checks_total": 1, "override_passed": False})


def a_missed_check_that_is_tolerated(project, django_user_model):
    Grade.objects.update_or_create(assignment=first_submission(project),
                                   defaults={"passed": True, "checks_total": 4, "checks_failed": 1})


def a_discarded_submission(project, django_user_model):
    first_submission(project).__class__.objects.filter(pk=first_submission(project).pk).update(status="discarded")


def a_deleted_submission(project, django_user_model):
    first_submission(project).delete()


def first_submission(project):
    from annotation.models import Assignment

    return Assignment.objects.filter(hit__project=project, hit__task="kv").order_by("pk").first()


CHANGES = [a_new_counted_submission, a_failed_grade, an_override_to_fail, a_missed_check_that_is_tolerated,
           a_discarded_submission, a_deleted_submission]


@pytest.mark.parametrize("change", CHANGES, ids=[change.__name__ for change in CHANGES])
def test_every_change_to_the_counted_labels_makes_the_tally_out_of_date(simulated, django_user_model, change):
    numbers_now(simulated, REVIEW_TALLY)
    before = numbers_state(simulated, REVIEW_TALLY)
    assert before.current
    change(simulated, django_user_model)
    after = numbers_state(simulated, REVIEW_TALLY)
    assert after.fingerprint != before.fingerprint and not after.current
    assert numbers_now(simulated, REVIEW_TALLY).status == Job.Status.DONE and tally_is_current(simulated)


def test_an_adjudication_leaves_the_tally_current_and_the_analytics_ignore_the_tally_job(simulated, django_user_model):
    from corpus.models import job_start
    from corpus.snapshots import fingerprint_of
    from exports.figures import figures_basis

    def tally_job_run() -> Job:
        # Run even though the tally is current (the button would start none): only the job's effect is looked at.
        state = numbers_state(simulated, REVIEW_TALLY)
        job = job_start(kind=REVIEW_TALLY, project=simulated, total=1,
                        params={"variant": "", "fingerprint": state.fingerprint})
        numbers_run(job_id=job.pk)
        job.refresh_from_db()
        return job

    numbers_now(simulated, REVIEW_TALLY)
    before = fingerprint_of(figures_basis(simulated))
    unit = split_units(simulated, "kv", settled="no").first().unit
    adjudicate(unit=unit, reviewer=django_user_model.objects.create_user("ruth"), answer="no", error_types=[],
               reason="read")
    assert tally_is_current(simulated)
    assert numbers_now(simulated, REVIEW_TALLY) is None  # nothing to compute: no job
    assert tally_job_run().status == Job.Status.DONE
    assert fingerprint_of(figures_basis(simulated)) != before  # the adjudication, which the figures read
    after = fingerprint_of(figures_basis(simulated))
    assert tally_job_run().status == Job.Status.DONE
    assert fingerprint_of(figures_basis(simulated)) == after
