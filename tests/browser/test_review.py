"""A reviewer settles a split unit with the keyboard only, in Debian's Chromium."""

import pytest
from playwright.sync_api import expect

from annotation.models import Adjudication, Hit
from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from corpus.models import Membership, Project
from tests.work import annotator_for, complete, import_generated

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("numbers_worker")]


@pytest.fixture
def split(django_user_model):
    project = import_generated(Project.objects.create(slug="split", name="Split"), documents=1, summarizers=1,
                               sentences=2)
    build_hits(project, "fv")
    for name, yes in (("a1", True), ("a2", True), ("a3", False)):
        complete(reserve_next_hit(annotator_for(django_user_model.objects.create_user(name)), project, "fv", confirmed=True), yes=yes)
    reviewer = django_user_model.objects.create_user("rita", password="rita-pass-123")
    Membership.objects.create(project=project, user=reviewer, role=Membership.Role.REVIEWER)
    return project


def test_a_reviewer_adjudicates_a_unit_by_keyboard(page, live_server, split):
    log_in(page, live_server, "rita", "rita-pass-123")
    page.goto(f"{live_server.url}/projects/split/review/")
    expect(page.locator(".review-unit")).to_have_count(2)
    page.keyboard.press("j")  # The first unit.
    page.keyboard.press("j")  # The second.
    page.keyboard.press("y")
    page.keyboard.press("2")
    page.keyboard.press("r")
    page.keyboard.type("The sentence says the opposite of S3; y and n typed here stay text.")
    screenshot(page, "review.png")
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")
    adjudication = Adjudication.objects.get()
    assert adjudication.unit.position == 1 and adjudication.has_error is True
    assert adjudication.error_types == ["relation"]
    assert adjudication.reason == "The sentence says the opposite of S3; y and n typed here stay text."
    expect(page.locator(f"#unit-{adjudication.unit.public_id} legend")).to_contain_text("by rita")


def test_sending_a_hit_back_asks_first(page, live_server, split, django_user_model):
    manager = django_user_model.objects.create_user("mona", password="mona-pass-123")
    Membership.objects.create(project=split, user=manager, role=Membership.Role.MANAGER)
    log_in(page, live_server, "mona", "mona-pass-123")
    page.goto(f"{live_server.url}/projects/split/review/")
    button = page.get_by_role("button", name="Send this HIT back for one more label per unit").first
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    button.click()
    page.wait_for_timeout(300)
    assert asked and "one more label" in asked[0] and "3 places become 4" in asked[0]
    assert Hit.objects.filter(project=split, extra_places=0).count() == Hit.objects.filter(project=split).count()
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        button.click()
    assert Hit.objects.filter(project=split, extra_places=1).count() == 1
