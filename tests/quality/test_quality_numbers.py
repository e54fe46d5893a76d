"""The quality numbers a job stores (annotation.quality.numbers): never shown as current once the work changed,
brought up to date by the job the page queued, a failed job shown with its error and a retry, managers only."""

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, AttentionCheck, Decision, Grade, Label, Unit
from annotation.quality.dashboard import project_quality
from annotation.quality.numbers import KIND, quality_basis, quality_numbers
from annotation.services.assignment import reserve_next_hit
from corpus.models import Job
from corpus.snapshots import _KINDS, fingerprint_of, snapshot_run
from tests.quality.test_views_quality import graded  # noqa: F401 (a fixture)
from tests.work import answers_for, crowd_annotator, set_status

pytestmark = [pytest.mark.django_db, pytest.mark.queued_quality]


def run_the_queued_job(project) -> Job:
    job = Job.objects.get(project=project, kind=KIND, status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
    snapshot_run(job_id=job.pk)
    job.refresh_from_db()
    return job


def pass_rate_of(page: str, annotator) -> str:
    row = re.search(rf'id="annotator-{annotator.public_id}">(.*?)</tr>', page, re.S).group(1)
    return re.findall(r'<td class="num">(\d+%|<span class="muted">—</span>)', row)[0]


def test_the_dashboard_says_computing_then_shows_the_jobs_numbers(graded, client, manager):  # noqa: F811
    project, people = graded
    client.force_login(manager)
    url = reverse("quality_dashboard", args=[project.slug])
    page = client.get(url).content.decode()
    assert "Computing the quality numbers" in page and people["A"].pseudonym not in page
    assert f'hx-get="{reverse("quality_numbers_status", args=[project.slug])}?shown="' in page
    client.get(url)  # a second view finds the queued job: one job, not two
    assert Job.objects.filter(project=project, kind=KIND).count() == 1
    assert run_the_queued_job(project).status == Job.Status.DONE
    page = client.get(url).content.decode()
    assert "from the work as it is now" in page and "hx-get" not in page
    assert (pass_rate_of(page, people["A"]), pass_rate_of(page, people["B"])) == ("0%", "100%")
    # The stored rows are the live computation's, number for number.
    live = {row.annotator.pk: row for row in project_quality(project).rows}
    stored = quality_numbers(project).dashboard()
    assert {row.annotator.pk: vars(row) for row in stored.rows} == {pk: vars(row) for pk, row in live.items()}
    assert stored.crowd_no_error_share == 0.25


def test_an_override_makes_the_page_say_updating_until_the_job_ran(graded, client, manager):  # noqa: F811
    project, people = graded
    client.force_login(manager)
    url = reverse("quality_dashboard", args=[project.slug])
    client.get(url)
    run_the_queued_job(project)
    grade = Grade.objects.get(assignment__annotator=people["A"])
    client.post(reverse("grade_override", args=[project.slug, grade.assignment.public_id]),
                {"passed": "yes", "reason": "The check was ambiguous."})
    page = client.get(url).content.decode()
    assert "Being updated: these numbers are from" in page and "from the work as it is now" not in page
    assert pass_rate_of(page, people["A"]) == "0%"  # the old number, under the note that says so
    status = reverse("quality_numbers_status", args=[project.slug])
    shown = quality_numbers(project).computed.isoformat()
    # Polled before the job ran: still the note; after it: a refresh.
    polled = client.get(status, {"shown": shown}, HTTP_HX_REQUEST="true")
    assert polled.status_code == 200 and b"Being updated" in polled.content
    run_the_queued_job(project)
    assert client.get(status, {"shown": shown}, HTTP_HX_REQUEST="true").headers["HX-Refresh"] == "true"
    page = client.get(url).content.decode()
    assert "from the work as it is now" in page and pass_rate_of(page, people["A"]) == "100%"
    # The annotator's own page says the same.
    page = client.get(reverse("annotator_quality", args=[project.slug, people["A"].public_id])).content.decode()
    assert "from the work as it is now" in page


def test_a_new_submission_is_counted_in_the_note(graded, client, manager):  # noqa: F811
    project, people = graded
    client.force_login(manager)
    url = reverse("annotator_quality", args=[project.slug, people["B"].public_id])
    client.get(url)
    run_the_queued_job(project)
    annotator = crowd_annotator("D")
    assignment = reserve_next_hit(annotator, project, "fv", confirmed=True)
    for unit in assignment.hit.units.all():
        Label.objects.create(assignment=assignment, unit=unit, annotator=annotator, **answers_for(unit))
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.SUBMITTED, submitted_at=timezone.now())
    page = client.get(url).content.decode()
    assert "before 1 newer submission." in page
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
    assert "Computing the quality numbers" in client.get(url).content.decode()
    run_the_queued_job(project)
    annotator = crowd_annotator("G")
    assignment = reserve_next_hit(annotator, project, "fv", confirmed=True)
    Label.objects.create(assignment=assignment, unit=assignment.hit.units.first(), annotator=annotator,
                         has_error=False, seconds_on_item=4)
    response = client.get(url)
    assert b"from the work as it is now" in response.content
    shown = {row.pk: (row.labels_given, row.mean_seconds) for row in response.context["page"]}
    assert shown[annotator.pk] == (1, 4.0)
    assert shown[people["B"].pk] == (3, 20.0)
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.EXPIRED)
    assert b"Being updated: these numbers are from" in client.get(url).content


def test_a_failed_job_is_shown_with_its_error_and_retried_only_on_request(graded, client, manager, monkeypatch):  # noqa: F811
    project, people = graded

    def broken(project):
        raise RuntimeError("the <database> went away")

    monkeypatch.setitem(_KINDS, KIND, _KINDS[KIND].__class__(KIND, _KINDS[KIND].basis, broken))
    client.force_login(manager)
    url = reverse("quality_dashboard", args=[project.slug])
    client.get(url)
    with pytest.raises(RuntimeError):
        run_the_queued_job(project)
    page = client.get(url).content.decode()
    # The error in words; Python's text stays in the worker's log.
    assert "could not be computed" in page and "It stopped on an unexpected error" in page and "Compute again" in page
    assert "database" not in page
    assert "hx-get" not in page  # no polling of a failed job
    polled = client.get(reverse("quality_numbers_status", args=[project.slug]), HTTP_HX_REQUEST="true",
                        HTTP_HX_CURRENT_URL=f"http://testserver{url}?sort=-agreement")
    assert polled.status_code == 286  # htmx: stop polling
    assert f'name="next" value="http://testserver{url}?sort=-agreement"' in polled.content.decode()
    client.get(url)
    assert Job.objects.filter(project=project, kind=KIND).count() == 1  # not retried on every view
    monkeypatch.undo()
    response = client.post(reverse("quality_numbers_compute", args=[project.slug]), {"next": "https://evil.example/"})
    assert response.url == url
    assert run_the_queued_job(project).status == Job.Status.DONE
    assert "from the work as it is now" in client.get(url).content.decode()


def test_only_the_projects_managers_reach_the_numbers(graded, client, manager, annotator, outsider):  # noqa: F811
    project, people = graded
    status = reverse("quality_numbers_status", args=[project.slug])
    compute = reverse("quality_numbers_compute", args=[project.slug])
    assert client.get(status).status_code == 302
    assert client.post(compute).status_code == 302
    for user, code in ((annotator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(status).status_code == code
        assert client.post(compute).status_code == code
        for name, args in (("quality_dashboard", []), ("annotator_list", []),
                           ("annotator_quality", [people["A"].public_id])):
            assert client.get(reverse(name, args=[project.slug, *args])).status_code == code
    assert not Job.objects.filter(project=project, kind=KIND).exists()
    client.force_login(manager)
    assert client.post(compute).status_code == 302
    assert Job.objects.filter(project=project, kind=KIND).count() == 1
    assert client.get(status, HTTP_HX_REQUEST="true").status_code == 200
