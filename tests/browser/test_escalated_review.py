"""A reviewer settles, in Chromium, the item the lead policy sent to review: every label it got, its top-up's
included, is on the card with why it is there, and the reviewer's answer becomes its label of record."""

import pytest
from playwright.sync_api import expect

from annotation.job_kinds import REVIEW_TALLY
from annotation.models import Adjudication, Assignment, Hit, UnitState
from annotation.redundancy import Verdict
from annotation.services.topups import topups_build
from corpus.models import Membership, Project, RedundancyPolicy
from tests.conftest import numbers_now
from tests.work import add_assistance, build_all, crowd_annotator, first_round_hit, import_small, work_next_hit

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def escalated(django_user_model):
    """A lead project (margin 2, cap 3): one sentence splits 1-1, its top-up label leaves it leading by one at the
    cap, so it goes to review; another splits and waits for its top-up."""
    project = Project.objects.create(slug="lead", name="Lead study", redundancy_policy=RedundancyPolicy.LEAD,
                                     lead_margin=2, lead_cap=3)
    import_small(project)
    add_assistance(project)
    build_all(project)
    hit = first_round_hit(project, "fv")
    first, second = hit.units.order_by("position")[:2]
    work_next_hit(crowd_annotator("ann", project), project, "fv")
    work_next_hit(crowd_annotator("bea", project), project, "fv", split=first)
    topups_build(project)
    work_next_hit(crowd_annotator("cid", project), project, "fv", split=first)
    state = UnitState.objects.get(unit=first)
    assert (state.verdict, state.counted) == (Verdict.ESCALATED, 3)
    reviewer = django_user_model.objects.create_user("rita", password="rita-pass-123")
    Membership.objects.create(project=project, user=reviewer, role=Membership.Role.REVIEWER)
    return project, first


def test_a_reviewer_sees_every_label_of_an_escalated_item_and_settles_it(page, live_server, escalated):
    project, unit = escalated
    numbers_now(project, REVIEW_TALLY)
    log_in(page, live_server, "rita", "rita-pass-123")
    page.goto(f"{live_server.url}/projects/{project.slug}/review/?task=fv")
    card = page.locator(f"#unit-{unit.public_id}")
    expect(card).to_be_visible()
    # All three labels, the top-up's included, and why the item is here.
    expect(card.locator("table.labels tbody tr")).to_have_count(3)
    expect(card).to_contain_text("Sent to review")
    expect(card).to_contain_text("3 labels")
    # The AI judgment that was shown, in words rather than its stored code.
    expect(card).to_contain_text("AI judgment shown: No error")
    expect(card).not_to_contain_text("no_error")
    screenshot(page, "review-escalated.png")
    card.focus()
    page.keyboard.press("n")
    page.keyboard.press("r")
    page.keyboard.type("The closest source sentence says the same thing in other words.")
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")
    adjudication = Adjudication.objects.get(unit=unit)
    assert adjudication.has_error is False and adjudication.reviewer.username == "rita"
    # Only escalated items, when the reviewer asks for them.
    page.goto(f"{live_server.url}/projects/{project.slug}/review/?task=fv&state=escalated")
    expect(page.locator(".review-unit")).to_have_count(1)
    expect(page.locator(f"#unit-{unit.public_id}")).to_be_visible()
    assert not Hit.objects.filter(project=project, round=2).exists()
    assert not Assignment.objects.filter(hit__project=project, status="reserved").exists()
