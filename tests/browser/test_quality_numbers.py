"""The quality dashboard shows a button where its numbers are missing or older than the work; the click starts the
job, and the page follows it and reloads itself with the new numbers once the job stored them, in Debian's
Chromium."""

import pytest
from playwright.sync_api import expect

from annotation.models import Grade
from annotation.quality.numbers import KIND
from corpus.models import Job, Membership
from corpus.snapshots import numbers_run
from tests.quality.test_views_quality import graded  # noqa: F401 (a fixture)

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.queued_numbers]


def run_the_queued_job(project) -> None:
    numbers_run(job_id=Job.objects.get(project=project, kind=KIND, status=Job.Status.QUEUED).pk)


def test_the_dashboard_follows_its_job_until_the_numbers_are_current(page, live_server, graded, django_user_model,  # noqa: F811
                                                                      monkeypatch):
    project, people = graded
    # No worker: the jobs the button queues wait until the test runs them.
    monkeypatch.setattr("corpus.tasks.snapshot_task.delay", lambda job_id: None)
    manager = django_user_model.objects.create_user("maya", password="maya-pass-123")
    Membership.objects.create(project=project, user=manager, role=Membership.Role.MANAGER)
    log_in(page, live_server, "maya", "maya-pass-123")
    url = f"{live_server.url}/projects/{project.slug}/quality/"
    page.goto(url)
    numbers = page.locator(f"#numbers-{KIND}")
    expect(numbers).to_contain_text("Not computed yet")
    assert not Job.objects.filter(project=project, kind=KIND).exists()  # the page view started nothing
    with page.expect_navigation():
        numbers.get_by_role("button", name="Compute the quality numbers").click()
    expect(numbers).to_contain_text("Computing the quality numbers")
    assert Job.objects.filter(project=project, kind=KIND).count() == 1
    run_the_queued_job(project)
    pass_rate = page.locator(f"#annotator-{people['A'].public_id} td.num").nth(2)
    expect(pass_rate).to_have_text("0%", timeout=10000)  # the page reloaded itself
    expect(numbers).to_contain_text("Up to date: the quality numbers")
    grade = Grade.objects.get(assignment__annotator=people["A"])
    Grade.objects.filter(pk=grade.pk).update(override_passed=True, override_reason="ambiguous check")
    page.goto(url)
    expect(numbers).to_contain_text("Older than the data")
    expect(pass_rate).to_have_text("0%")  # the stored number, under the note
    assert Job.objects.filter(project=project, kind=KIND).count() == 1
    screenshot(page, "quality-dashboard-stale.png")
    with page.expect_navigation():
        numbers.get_by_role("button", name="Update the quality numbers").click()
    expect(numbers).to_contain_text("Updating the quality numbers")
    run_the_queued_job(project)
    expect(numbers).to_contain_text("Up to date: the quality numbers", timeout=10000)
    expect(pass_rate).to_have_text("100%")
    screenshot(page, "quality-dashboard-current.png")
