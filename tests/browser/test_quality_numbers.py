"""The quality dashboard says its numbers are being updated after an override, and reloads itself with the new ones
once the job stored them, in Debian's Chromium."""

import pytest
from playwright.sync_api import expect

from annotation.models import Grade
from annotation.quality.numbers import KIND
from corpus.models import Job, Membership
from corpus.snapshots import snapshot_run
from tests.quality.test_views_quality import graded  # noqa: F401 (a fixture)

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.queued_quality]


def run_the_queued_job(project) -> None:
    snapshot_run(job_id=Job.objects.get(project=project, kind=KIND, status=Job.Status.QUEUED).pk)


def test_the_dashboard_follows_its_job_until_the_numbers_are_current(page, live_server, graded, django_user_model,  # noqa: F811
                                                                      monkeypatch):
    project, people = graded
    # No worker: the jobs the pages queue wait until the test runs them.
    monkeypatch.setattr("corpus.tasks.snapshot_task.delay", lambda job_id: None)
    manager = django_user_model.objects.create_user("maya", password="maya-pass-123")
    Membership.objects.create(project=project, user=manager, role=Membership.Role.MANAGER)
    log_in(page, live_server, "maya", "maya-pass-123")
    url = f"{live_server.url}/projects/{project.slug}/quality/"
    page.goto(url)
    expect(page.locator("#numbers-state")).to_contain_text("Computing the quality numbers")
    run_the_queued_job(project)
    row = page.locator(f"#annotator-{people['A'].public_id}")
    expect(row).to_contain_text("0%", timeout=10000)  # the page reloaded itself
    expect(page.locator("#numbers-state")).to_contain_text("from the work as it is now")
    grade = Grade.objects.get(assignment__annotator=people["A"])
    Grade.objects.filter(pk=grade.pk).update(override_passed=True, override_reason="ambiguous check")
    page.goto(url)
    expect(page.locator("#numbers-state")).to_contain_text("Being updated: these numbers are from")
    screenshot(page, "quality-dashboard-stale.png")
    run_the_queued_job(project)
    expect(page.locator("#numbers-state")).to_contain_text("from the work as it is now", timeout=10000)
    expect(row.locator("td.num").nth(2)).to_contain_text("100%")
    screenshot(page, "quality-dashboard-current.png")
