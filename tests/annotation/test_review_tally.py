"""The reviewer's list as a job tallies it: the same units in the same order as the live computation for every
filter, marked out of date while new labels wait for the job, current after it, and a failed job shown with its
error."""

import itertools

import pytest
from django.urls import reverse

from annotation.models import Annotator, Grade, ReviewTally, SplitUnit
from annotation.selectors import agreement_summary, disagreements, split_units
from annotation.services.assignment import reserve_next_hit
from annotation.services.review import adjudicate
from annotation.services.review_tally import current_tally, review_tally_compute
from corpus.models import Job
from exports.simulate import simulate_annotations
from tests.work import annotator_for, complete, import_generated

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("review_worker")]


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


def test_every_filter_gives_the_units_of_the_live_computation_in_its_order(simulated):
    tally = review_tally_compute(simulated)
    assert SplitUnit.objects.filter(project=simulated).count() > 10
    for task, chosen in itertools.product(("fv", "kv", "ka"), filter_choices(simulated)):
        live = [(unit.pk, unit.majority) for unit in disagreements(simulated, task, **chosen)]
        stored = list(split_units(simulated, task, **chosen).values_list("unit_id", "majority"))
        assert [pk for pk, _ in stored] == [pk for pk, _ in live], (task, chosen)
        assert [round(m, 6) for _, m in stored] == [round(float(m), 6) for _, m in live], (task, chosen)
    assert {task for task in ("fv", "kv", "ka") if disagreements(simulated, task, checks="missed").exists()} == {"fv"}
    for task in ("fv", "kv", "ka"):
        assert agreement_summary(simulated, task, among=tally.pairs[task]) == agreement_summary(simulated, task)


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


@pytest.mark.queued_review
def test_new_labels_mark_the_list_out_of_date_until_the_job_has_tallied_them(client, simulated, manager,
                                                                            django_user_model):
    url = reverse("review", args=[simulated.slug])
    client.force_login(manager)
    page = client.get(url).content.decode()
    assert "Tallying the list" in page and "units to review" not in page
    job = Job.objects.get(project=simulated, kind="review_tally")
    assert job.status == Job.Status.QUEUED
    assert client.get(url) and Job.objects.filter(kind="review_tally").count() == 1  # the open job, not another
    from annotation.services.review_tally import review_tally_run

    review_tally_run(job_id=job.pk)
    status = client.get(reverse("review_status", args=[simulated.slug]), headers={"HX-Request": "true"})
    assert status.headers.get("HX-Refresh") == "true"
    page = client.get(url).content.decode()
    before = SplitUnit.objects.filter(project=simulated, task="fv").count()
    assert f"{before} units to review." in page and "updating" not in page and "List as of" in page

    # One more annotator on an FV HIT: the stored list is shown as it was, marked out of date, and polled.
    hit = simulated.hits.filter(task="fv").order_by("position").first()
    hit.extra_places = 1
    hit.save(update_fields=["extra_places"])
    complete(reserve_next_hit(annotator_for(django_user_model.objects.create_user("later")), simulated, "fv", confirmed=True),
             yes=True)
    page = client.get(url).content.decode()
    assert "updating" in page and f"{before} units to review." in page
    assert reverse("review_status", args=[simulated.slug]) + "?listed=1" in page
    tally, current, _ = current_tally(simulated)
    assert not current
    polled = client.get(reverse("review_status", args=[simulated.slug]) + "?listed=1",
                        headers={"HX-Request": "true"})
    assert polled.status_code == 200 and "updating" in polled.content.decode()
    review_tally_run(job_id=Job.objects.filter(kind="review_tally").latest("pk").pk)
    polled = client.get(reverse("review_status", args=[simulated.slug]) + "?listed=1",
                        headers={"HX-Request": "true"})
    assert polled.status_code == 286 and "up to date again" in polled.content.decode()
    page = client.get(url).content.decode()
    after = [unit.public_id for unit in disagreements(simulated, "fv")]
    assert "updating" not in page and f"{len(after)} unit{'s' if len(after) != 1 else ''} to review." in page


@pytest.mark.queued_review
def test_a_settled_unit_leaves_the_unsettled_list_at_once(client, simulated, manager):
    review_tally_compute(simulated)
    client.force_login(manager)
    url = reverse("review", args=[simulated.slug]) + "?task=kv&settled=no"
    unit = client.get(url).context["cards"][0]["unit"]
    client.post(reverse("review_unit", args=[simulated.slug, unit.public_id]), {"answer": "no", "reason": "read"})
    page = client.get(url)
    assert unit not in [card["unit"] for card in page.context["cards"]] and "updating" not in page.content.decode()


@pytest.mark.queued_review
def test_a_failed_job_is_shown_with_its_error_and_tallied_again_on_request(client, simulated, manager, monkeypatch):
    from annotation.services import review_tally

    def broken(project, task):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(review_tally, "_tally_task", broken)
    client.force_login(manager)
    url = reverse("review", args=[simulated.slug])
    client.get(url)
    job = Job.objects.get(kind="review_tally")
    with pytest.raises(RuntimeError):
        review_tally.review_tally_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and not ReviewTally.objects.exists()
    page = client.get(url).content.decode()
    # The error in words; Python's text stays in the worker's log.
    assert "could not be tallied" in page and "It stopped on an unexpected error" in page
    assert "the database went away" not in page
    assert Job.objects.filter(kind="review_tally").count() == 1  # a page view does not retry it
    polled = client.get(reverse("review_status", args=[simulated.slug]), headers={"HX-Request": "true"})
    assert polled.status_code == 286 and "Tally again" in polled.content.decode()
    monkeypatch.undo()
    assert client.post(reverse("review_tally_again", args=[simulated.slug])).status_code == 302
    again = Job.objects.filter(kind="review_tally").latest("pk")
    assert again.pk != job.pk
    review_tally.review_tally_run(job_id=again.pk)
    assert current_tally(simulated)[1]


def test_only_managers_and_reviewers_see_or_restart_the_tally(client, simulated, annotator, other_annotator,
                                                               outsider):
    for user, status in ((annotator, 403), (other_annotator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(reverse("review_status", args=[simulated.slug])).status_code == status
        assert client.post(reverse("review_tally_again", args=[simulated.slug])).status_code == status
    assert not Job.objects.filter(kind="review_tally").exists()


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
    review_tally_compute(simulated)
    assert current_tally(simulated)[1]
    change(simulated, django_user_model)
    assert not current_tally(simulated)[1]
    assert current_tally(simulated)[1] is False and review_tally_compute(simulated) and current_tally(simulated)[1]


def test_an_adjudication_leaves_the_tally_current_and_the_analytics_ignore_the_tally_job(simulated, django_user_model):
    from annotation.services.review_tally import review_tally_run, review_tally_start
    from exports.figures import labels_fingerprint

    review_tally_compute(simulated)
    before = labels_fingerprint(simulated)
    unit = split_units(simulated, "kv", settled="no").first().unit
    adjudicate(unit=unit, reviewer=django_user_model.objects.create_user("ruth"), answer="no", error_types=[],
               reason="read")
    assert current_tally(simulated)[1]
    review_tally_run(job_id=review_tally_start(project=simulated).pk)
    assert Job.objects.get(kind="review_tally").status == Job.Status.DONE
    assert labels_fingerprint(simulated) != before  # the adjudication, which the figures read
    after = labels_fingerprint(simulated)
    review_tally_run(job_id=review_tally_start(project=simulated).pk)
    assert labels_fingerprint(simulated) == after
