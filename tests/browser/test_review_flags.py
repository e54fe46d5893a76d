"""A reviewer reads an annotator's flag on an item whose labels agree, and lists only the flagged items, in Debian's
Chromium."""

import os

import pytest
from playwright.sync_api import expect

from annotation.services.assignment import reserve_next_hit
from annotation.services.flags import flag_item
from annotation.services.hits import build_hits
from corpus.models import Membership, Project
from tests.work import annotator_for, complete, import_generated

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("numbers_worker")]
SHOTS = os.environ.get("FINEGRAIN_SHOTS", "/tmp/shots")


@pytest.fixture
def flagged(django_user_model):
    """Two annotators agree on every sentence; the first flagged the second sentence before submitting."""
    project = import_generated(Project.objects.create(slug="flags", name="Flags", attention_check_rate=0),
                               documents=1, summarizers=1, sentences=2)
    build_hits(project, "fv")
    first = reserve_next_hit(annotator_for(django_user_model.objects.create_user("a1")), project, "fv",
                             confirmed=True)
    unit = first.hit.units.order_by("position")[1]
    flag_item(assignment=first, unit=unit, comment="The sentence is cut off: which weekday?")
    complete(first)
    complete(reserve_next_hit(annotator_for(django_user_model.objects.create_user("a2")), project, "fv",
                              confirmed=True))
    reviewer = django_user_model.objects.create_user("rita", password="rita-pass-123")
    Membership.objects.create(project=project, user=reviewer, role=Membership.Role.REVIEWER)
    return project, unit, first.annotator


def test_a_reviewer_reads_the_flag_of_an_item_whose_labels_agree(page, live_server, flagged):
    project, unit, flagger = flagged
    log_in(page, live_server, "rita", "rita-pass-123")
    page.goto(f"{live_server.url}/projects/flags/review/")
    expect(page.locator(".review-unit")).to_have_count(1)
    card = page.locator(f"#unit-{unit.public_id}")
    expect(card.locator(".review-flags")).to_contain_text("The sentence is cut off: which weekday?")
    expect(card.locator(".review-flags")).to_contain_text(flagger.pseudonym)
    expect(card.locator(".review-flags time")).to_have_count(1)
    expect(card.locator("h2 .tag-flagged")).to_have_text("flagged")
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, "review-flag.png"), full_page=True)
    screenshot(page, "review-flag.png")

    # Only the flagged items, then only the others: the filter keeps the rest of the list's choices.
    page.select_option("select[name=flagged]", "yes")
    with page.expect_navigation():
        page.click("#review-filters button[type=submit]")
    expect(page.locator(".review-unit")).to_have_count(1)
    page.select_option("select[name=flagged]", "no")
    with page.expect_navigation():
        page.click("#review-filters button[type=submit]")
    expect(page.locator(".review-unit")).to_have_count(0)
    expect(page.locator("main")).to_contain_text("Nothing to review with these filters.")
