"""A manager edits a project's settings in Debian's Chromium: a cost preview, a change refused with the reason once
annotation has started, a change that is allowed."""

import pytest
from playwright.sync_api import expect

from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from corpus.models import Membership, Project
from tests.work import complete, crowd_annotator, import_generated, may_create_projects

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_refused_change_says_why_and_an_allowed_one_is_saved(page, live_server, django_user_model):
    project = import_generated(Project.objects.create(slug="cfg", name="Settings study"), documents=2,
                               summarizers=1)
    build_hits(project, "fv")
    complete(reserve_next_hit(crowd_annotator("w1", project), project, "fv", confirmed=True))
    boss = may_create_projects(django_user_model.objects.create_user("boss", password="boss-pass-123"))
    Membership.objects.create(project=project, user=boss, role=Membership.Role.MANAGER)

    log_in(page, live_server, "boss", "boss-pass-123")
    page.goto(f"{live_server.url}/projects/cfg/")
    page.click("#settings-link")
    page.fill("#id_hourly_wage_usd", "16.32")
    page.click("button[name=preview]")
    expect(page.locator("#cost-preview")).to_contain_text("→ $")
    page.fill("#id_annotators_per_unit", "2")
    page.click("button[name=save]")
    expect(page.locator("#settings-errors")).to_contain_text("Nothing was saved")
    expect(page.locator(".setting.has-error")).to_contain_text("can rise but not fall below 3")
    screenshot(page, "settings-refused.png")
    project.refresh_from_db()
    assert (project.annotators_per_unit, str(project.hourly_wage_usd)) == (3, "10.88")
    page.fill("#id_annotators_per_unit", "4")
    page.click("button[name=save]")
    expect(page.locator("ul.messages")).to_contain_text("Saved: annotators the result stands for, hourly wage (usd).")
    project.refresh_from_db()
    assert (project.annotators_per_unit, str(project.hourly_wage_usd)) == (4, "16.32")


def test_choosing_lead_shows_its_margin_and_cap_and_the_estimate_follows(page, live_server, django_user_model):
    project = import_generated(Project.objects.create(slug="lpi", name="Labels per item study"), documents=2,
                               summarizers=1)
    build_hits(project, "fv")
    boss = may_create_projects(django_user_model.objects.create_user("boss", password="boss-pass-123"))
    Membership.objects.create(project=project, user=boss, role=Membership.Role.MANAGER)

    log_in(page, live_server, "boss", "boss-pass-123")
    page.goto(f"{live_server.url}/projects/lpi/settings/")
    section = page.locator("#labels-per-item")
    expect(section).to_contain_text("Annotators the result stands for")
    expect(page.locator("#id_lead_margin")).to_be_hidden()
    # A choice previews its cost at once (htmx), with the lead's own settings beside it.
    page.get_by_label("Lead:").check()
    expect(page.locator("#id_lead_margin")).to_be_visible()
    expect(page.locator("#id_lead_cap")).to_be_visible()
    expect(page.locator("#cost-preview")).to_contain_text("Lead: saves about $")
    expect(page.locator("#cost-preview")).to_contain_text("simulation calibrated to the paper")
    page.screenshot(path="/tmp/settings-redundancy.png", full_page=True)
    screenshot(page, "settings-redundancy.png")
    page.get_by_label("Adaptive:").check()
    expect(page.locator("#id_lead_margin")).to_be_hidden()
    expect(page.locator("#cost-preview")).to_contain_text("Adaptive: saves about $")
    page.get_by_label("Lead:").check()
    expect(page.locator("#id_lead_cap")).to_be_visible()
    page.fill("#id_lead_cap", "7")
    page.fill("#id_budget_usd", "250")
    page.click("button[name=preview]")
    expect(page.locator("#cost-preview")).to_contain_text("The simulation did not run with these settings")
    expect(page.locator("#cost-preview")).to_contain_text("The budget is $250")
    page.click("button[name=save]")
    expect(page.locator("ul.messages")).to_contain_text("Saved: how many annotators each item gets, most annotators per item, budget")
    expect(page.locator("#id_lead_cap")).to_have_value("7")
    project.refresh_from_db()
    assert (project.redundancy_policy, project.lead_cap, str(project.budget_usd)) == ("lead", 7, "250.00")
