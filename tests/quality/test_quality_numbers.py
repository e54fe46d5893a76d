"""The quality numbers a job stores (annotation.quality.numbers, stored numbers): never shown as current once the work
changed, shown with a button while none or older ones are stored (a page view starts no job), brought up to date by
the job the button asked for, a failed job shown with its error and tried again only when asked, managers only."""

import re
from dataclasses import replace
from urllib.parse import quote

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, AttentionCheck, Decision, Grade, Label, Unit
from annotation.quality.dashboard import project_quality
from annotation.quality.numbers import KIND, quality_basis, quality_numbers
from annotation.services.assignment import reserve_next_hit
from corpus.jobs import _KINDS
from corpus.models import Job, Membership
from corpus.snapshots import fingerprint_of, numbers_run
from tests.conftest import numbers_now
from tests.quality.test_views_quality import graded  # noqa: F401 (a fixture)
from tests.work import answers_for, crowd_annotator, set_status

pytestmark = [pytest.mark.django_db, pytest.mark.queued_numbers]


def run_the_queued_job(project) -> Job:
    job = Job.objects.get(project=project, kind=KIND, status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
    numbers_run(job_id=job.pk)
    job.refresh_from_db()
    return job


def pass_rate_of(page: str, annotator) -> str:
    row = re.search(rf'id="annotator-{annotator.public_id}">(.*?)</tr>', page, re.S).group(1)
    return re.findall(r'<td class="num">(\d+%|<span class="muted">—</span>)', row)[0]


def status_url(project) -> str:
    return reverse("numbers_status", args=[project.slug, KIND])


def update_url(project) -> str:
    return reverse("numbers_update", args=[project.slug, KIND])


def polls(page: str, project) -> bool:
    return f'hx-get="{status_url(project)}?' in page


def quality_jobs(project):
    return Job.objects.filter(project=project, kind=KIND)


def test_the_dashboard_shows_a_button_and_the_jobs_numbers_once_it_ran(graded, client, manager,  # noqa: F811
                                                                      django_capture_on_commit_callbacks):
    project, people = graded
    client.force_login(manager)
    url = reverse("quality_dashboard", args=[project.slug])
    with django_capture_on_commit_callbacks() as queued:
        page = client.get(url).content.decode()
        client.get(url)
    assert "Not computed yet:" in page and people["A"].pseudonym not in page
    assert f'action="{update_url(project)}"' in page and "Compute the quality numbers</button>" in page
    assert not polls(page, project) and not quality_jobs(project).exists() and queued == []
    with django_capture_on_commit_callbacks() as queued:
        response = client.post(update_url(project), {"variant": "", "next": url})
    assert response.status_code == 302 and response.url == url
    assert quality_jobs(project).get().status == Job.Status.QUEUED and len(queued) == 1
    with django_capture_on_commit_callbacks() as queued:
        client.post(update_url(project), {"variant": "", "next": url})  # a second click follows the open job
    assert quality_jobs(project).count() == 1 and queued == []
    page = client.get(url).content.decode()
    assert "Computing the quality numbers" in page and f'hx-get="{status_url(project)}?variant=&amp;shown="' in page
    assert run_the_queued_job(project).status == Job.Status.DONE
    page = client.get(url).content.decode()
    assert "Up to date: the quality numbers computed" in page and not polls(page, project)
    assert (pass_rate_of(page, people["A"]), pass_rate_of(page, people["B"])) == ("0%", "100%")
    # The stored rows are the live computation's, number for number.
    live = {row.annotator.pk: row for row in project_quality(project).rows}
    stored = quality_numbers(project).dashboard()
    assert {row.annotator.pk: vars(row) for row in stored.rows} == {pk: vars(row) for pk, row in live.items()}
    assert stored.crowd_no_error_share == 0.25


def test_an_override_makes_the_numbers_older_than_the_work_until_the_job_ran(graded, client, manager,  # noqa: F811
                                                                            django_capture_on_commit_callbacks):
    project, people = graded
    client.force_login(manager)
    url = reverse("quality_dashboard", args=[project.slug])
    numbers_now(project, KIND)
    grade = Grade.objects.get(assignment__annotator=people["A"])
    client.post(reverse("grade_override", args=[project.slug, grade.assignment.public_id]),
                {"passed": "yes", "reason": "The check was ambiguous."})
    with django_capture_on_commit_callbacks() as queued:
        page = client.get(url).content.decode()
    assert "Older than the data:" in page and "before the latest grades, overrides" in page
    assert "Up to date" not in page and "Update the quality numbers</button>" in page and not polls(page, project)
    assert pass_rate_of(page, people["A"]) == "0%"  # the old number, under the note that says so
    assert quality_jobs(project).count() == 1 and queued == []
    client.post(update_url(project), {"next": url})
    shown = quality_numbers(project).computed.isoformat()
    page = client.get(url).content.decode()
    assert "Updating the quality numbers." in page and "The page reloads itself" in page
    assert f'hx-get="{status_url(project)}?variant=&amp;shown={quote(shown, safe="/")}"' in page
    # Polled before the job ran: still the note; after it: a refresh (htmx), or back to the page.
    polled = client.get(status_url(project), {"shown": shown}, HTTP_HX_REQUEST="true")
    assert polled.status_code == 200 and b"Updating the quality numbers." in polled.content
    run_the_queued_job(project)
    assert client.get(status_url(project), {"shown": shown}, HTTP_HX_REQUEST="true").headers["HX-Refresh"] == "true"
    assert client.get(status_url(project), {"shown": shown}).url == url
    page = client.get(url).content.decode()
    assert "Up to date:" in page and pass_rate_of(page, people["A"]) == "100%"
    # The annotator's own page says the same.
    page = client.get(reverse("annotator_quality", args=[project.slug, people["A"].public_id])).content.decode()
    assert "Up to date:" in page


def test_a_new_submission_is_counted_in_the_note(graded, client, manager):  # noqa: F811
    project, people = graded
    client.force_login(manager)
    url = reverse("annotator_quality", args=[project.slug, people["B"].public_id])
    numbers_now(project, KIND)
    annotator = crowd_annotator("D")
    assignment = reserve_next_hit(annotator, project, "fv", confirmed=True)
    for unit in assignment.hit.units.all():
        Label.objects.create(assignment=assignment, unit=unit, annotator=annotator, **answers_for(unit))
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.SUBMITTED, submitted_at=timezone.now())
    page = client.get(url).content.decode()
    assert "Older than the data:" in page and "before 1 newer submission." in page
    # Live parts stay live: a status change shows at once, and changes no stored number.
    set_status(people["B"], project, "blocked")
    assert quality_numbers(project).newer_submissions == 1
    assert '<strong id="status">Blocked</strong>' in client.get(url).content.decode()


@pytest.mark.parametrize("change", ["override", "regrade", "confirmation", "discard", "submission", "expiry",
                                    "attention check", "reassignment", "assistance", "deletion"])
def test_every_change_behind_a_number_moves_the_fingerprint(graded, change):  # noqa: F811
    project, people = graded
    before = fingerprint_of(quality_basis(project))
    grade = Grade.objects.get(assignment__annotator=people["B"])
    submitted = grade.assignment
    if change == "override":
        Grade.objects.filter(pk=grade.pk).update(override_passed=False, overridden_at=timezone.now())
    elif change == "regrade":
        Grade.objects.filter(pk=grade.pk).update(checks_failed=1)
    elif change == "confirmation":
        Assignment.objects.filter(pk=submitted.pk).update(confirmed_at=None)
    elif change == "discard":
        Assignment.objects.filter(pk=submitted.pk).update(status=Assignment.Status.DISCARDED)
    elif change in ("submission", "expiry"):
        assignment = reserve_next_hit(crowd_annotator("E"), project, "fv", confirmed=True)
        # Saving an answer on an open assignment changes no stored number (the annotator list adds it live).
        Label.objects.create(assignment=assignment, unit=assignment.hit.units.first(), annotator=assignment.annotator,
                             has_error=False, seconds_on_item=3)
        assert fingerprint_of(quality_basis(project)) == before
        status = Assignment.Status.SUBMITTED if change == "submission" else Assignment.Status.EXPIRED
        Assignment.objects.filter(pk=assignment.pk).update(status=status)
    elif change == "attention check":
        unit = Unit.objects.filter(hit__project=project, attention_check__isnull=True).first()
        AttentionCheck.objects.create(unit=unit, kind=AttentionCheck.Kind.FV_AI_SAYS_CORRECT, expected={})
    elif change == "reassignment":
        Assignment.objects.filter(pk=submitted.pk).update(annotator=crowd_annotator("F"))
    elif change == "assistance":
        Job.objects.create(project=project, kind="assist", status=Job.Status.DONE, finished=timezone.now())
    elif change == "deletion":
        Decision.objects.filter(assignment=submitted).delete()
        submitted.delete()
    assert fingerprint_of(quality_basis(project)) != before


def test_the_annotator_list_adds_open_work_live_and_says_when_the_rest_is_older(graded, client, manager):  # noqa: F811
    project, people = graded
    client.force_login(manager)
    url = reverse("annotator_list", args=[project.slug])
    page = client.get(url).content.decode()
    assert "Not computed yet:" in page and "Compute the quality numbers</button>" in page
    assert not quality_jobs(project).exists()
    numbers_now(project, KIND)
    annotator = crowd_annotator("G")
    assignment = reserve_next_hit(annotator, project, "fv", confirmed=True)
    Label.objects.create(assignment=assignment, unit=assignment.hit.units.first(), annotator=annotator,
                         has_error=False, seconds_on_item=4)
    response = client.get(url)
    assert b"Up to date: the quality numbers" in response.content
    shown = {row.pk: (row.labels_given, row.mean_seconds) for row in response.context["page"]}
    assert shown[annotator.pk] == (1, 4.0)
    assert shown[people["B"].pk] == (3, 20.0)
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.EXPIRED)
    page = client.get(url).content.decode()
    assert "Older than the data:" in page and "Update the quality numbers</button>" in page
    assert quality_jobs(project).count() == 1


def broken_compute(job):
    raise RuntimeError("the <database> went away")


def test_a_failed_job_is_shown_with_its_error_and_retried_only_on_request(graded, client, manager, monkeypatch,  # noqa: F811
                                                                         django_capture_on_commit_callbacks):
    project, people = graded
    kind = _KINDS[KIND]
    monkeypatch.setitem(_KINDS, KIND, replace(kind, numbers=replace(kind.numbers,
                                                                     compute=f"{__name__}.broken_compute")))
    client.force_login(manager)
    url = reverse("quality_dashboard", args=[project.slug])
    client.post(update_url(project), {"next": url})
    with pytest.raises(RuntimeError):
        run_the_queued_job(project)
    failed = quality_jobs(project).get()
    assert failed.status == Job.Status.FAILED
    with django_capture_on_commit_callbacks() as queued:
        page = client.get(url).content.decode()
        client.get(url)
    # The error in words; Python's text stays in the worker's log.
    assert "Could not compute the quality numbers" in page and "It stopped on an unexpected error" in page
    assert "Compute again</button>" in page and "database" not in page
    assert not polls(page, project)  # no polling of a failed job
    assert quality_jobs(project).count() == 1 and queued == []  # not retried on every view
    polled = client.get(status_url(project), HTTP_HX_REQUEST="true",
                        HTTP_HX_CURRENT_URL=f"http://testserver{url}?sort=-agreement")
    assert polled.status_code == 286  # htmx: stop polling
    assert f'name="next" value="http://testserver{url}?sort=-agreement"' in polled.content.decode()
    assert "Compute again</button>" in polled.content.decode()
    monkeypatch.undo()
    response = client.post(update_url(project), {"next": "https://evil.example/"})
    assert response.url == url
    assert quality_jobs(project).count() == 2
    assert run_the_queued_job(project).status == Job.Status.DONE
    page = client.get(url).content.decode()
    assert "Up to date: the quality numbers" in page and "Could not compute" not in page


def test_only_the_projects_managers_reach_the_numbers(graded, client, manager, annotator, outsider,  # noqa: F811
                                                      django_user_model):
    project, people = graded
    status, update = status_url(project), update_url(project)
    assert client.get(status).status_code == 302  # to the login page
    assert client.post(update).status_code == 302
    reviewer = django_user_model.objects.create_user("ruby")
    Membership.objects.create(project=project, user=reviewer, role=Membership.Role.REVIEWER)
    for user, code in ((annotator, 403), (reviewer, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(status).status_code == code
        assert client.post(update).status_code == code
        for name, args in (("quality_dashboard", []), ("annotator_list", []),
                           ("annotator_quality", [people["A"].public_id])):
            assert client.get(reverse(name, args=[project.slug, *args])).status_code == code
    assert not quality_jobs(project).exists()
    client.force_login(manager)
    assert client.post(update).status_code == 302
    assert quality_jobs(project).count() == 1
    assert client.get(status, HTTP_HX_REQUEST="true").status_code == 200
