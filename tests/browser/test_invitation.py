"""A manager invites a reviewer; the reviewer opens the link in another browser, makes an account and lands on the
project; an account made on the spot chooses its own password at the first log-in. In Debian's Chromium."""

import pytest
from playwright.sync_api import expect

from corpus.models import Membership, Project
from tests.work import may_create_projects

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def project(django_user_model):
    project = Project.objects.create(slug="study", name="Study")
    boss = may_create_projects(django_user_model.objects.create_user("boss", password="boss-pass-123"))
    Membership.objects.create(project=project, user=boss, role=Membership.Role.MANAGER)
    return project


def test_an_invited_reviewer_makes_an_account_and_lands_on_the_project(chromium, page, live_server, project):
    log_in(page, live_server, "boss", "boss-pass-123")
    page.goto(f"{live_server.url}/projects/study/")
    page.click("#people-link")
    page.fill("#invite-label", "Reviewer, Anna")
    page.select_option("#invite-role", "reviewer")
    page.click("text=Make an invitation link")
    link = page.inner_text("#new-invitation code")
    screenshot(page, "people.png")

    other = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    other.goto(link)
    other.fill("input[name=username]", "anna")
    other.fill("input[name=password1]", "anna-long-pass-42")
    other.fill("input[name=password2]", "anna-long-pass-42")
    other.click("text=Make my account and join")
    expect(other.locator("h1")).to_have_text("Study")
    expect(other.locator("#review-hits")).to_be_visible()
    assert Membership.objects.get(user__username="anna").role == "reviewer"
    other.goto(link)
    expect(other.locator("h1")).to_have_text("This invitation does not work")
    other.context.close()


def test_an_account_made_on_the_spot_chooses_its_password_first(chromium, page, live_server, project):
    log_in(page, live_server, "boss", "boss-pass-123")
    page.goto(f"{live_server.url}/projects/study/people/")
    page.fill("#create-username", "bea")
    page.click("text=Make the account")
    password = page.inner_text("#new-account code")

    other = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    log_in(other, live_server, "bea", password)
    other.goto(f"{live_server.url}/work/")
    expect(other.locator("h1")).to_have_text("Choose your password")
    # The one-time password was just typed to log in: it is not asked for again.
    expect(other.locator("input[name=old_password]")).to_have_count(0)
    other.fill("input[name=new_password1]", "bea-own-pass-77")
    other.fill("input[name=new_password2]", "bea-own-pass-77")
    other.click("text=Save my password")
    other.goto(f"{live_server.url}/work/")
    expect(other.locator("h1")).to_have_text("My work")
    other.context.close()
