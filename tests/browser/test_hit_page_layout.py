"""The HIT page's layout in Chromium: the sticky submit bar never covers the item in focus, the confirmation dialog
shows no Submit button while answers are missing, and the instructions dialog opens at its top."""

import pytest

from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from corpus.models import Membership, Project
from tests.work import annotator_for, import_generated

from .test_hit_pages import log_in_by_keyboard, press, saved

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SENTENCES = 14  # More items than the answers column holds at 1280 x 900: it scrolls.


@pytest.fixture
def long_hit(django_user_model):
    project = import_generated(Project.objects.create(slug="long", name="Long summary"), documents=1,
                               summarizers=1, sentences=SENTENCES, words_per_sentence=14)
    Project.objects.filter(pk=project.pk).update(annotators_per_unit=1)
    build_hits(project, "fv")
    user = django_user_model.objects.create_user("reader", password="pw-reader-123")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    return reserve_next_hit(annotator_for(user), project, "fv", confirmed=True)


def open_hit(page, live_server, assignment):
    log_in_by_keyboard(page, live_server, "reader")
    page.goto(f"{live_server.url}/work/hits/{assignment.public_id}/")
    page.wait_for_selector("#item-0.current")


def focused_item_clear_of_the_bar(page, position: int) -> bool:
    return page.evaluate("""(position) => {
        const item = document.getElementById("item-" + position).getBoundingClientRect();
        const bar = document.querySelector(".submit-bar").getBoundingClientRect();
        const column = document.getElementById("answers").getBoundingClientRect();
        return item.bottom <= bar.top + 0.5 && item.top >= column.top - 0.5;
    }""", position)


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 900}, {"width": 760, "height": 700}])
def test_moving_with_j_and_k_keeps_the_focused_items_answers_above_the_submit_bar(chromium, live_server, long_hit,
                                                                               viewport):
    # Wide: the answers column scrolls; narrow (one column): the window does, and the bar sticks to its bottom.
    context = chromium.new_context(viewport=viewport)
    page = context.new_page()
    try:
        open_hit(page, live_server, long_hit)
        for position in range(1, SENTENCES):
            press(page, "j")
            page.wait_for_selector(f"#item-{position}.current")
            assert focused_item_clear_of_the_bar(page, position), f"item {position} is under the submit bar"
        page.screenshot(path=f"/tmp/hit-scroll-{viewport['width']}.png")
        for position in range(SENTENCES - 2, -1, -1):
            press(page, "k")
            page.wait_for_selector(f"#item-{position}.current")
            assert focused_item_clear_of_the_bar(page, position), f"item {position} is out of view going back"
    finally:
        context.close()


def test_the_confirmation_shows_no_submit_button_while_answers_are_missing(page, live_server, long_hit):
    open_hit(page, live_server, long_hit)
    press(page, "Enter")
    page.wait_for_selector("#confirm-submit[open]")
    assert f"{SENTENCES} item(s) still need an answer" in page.inner_text("#confirm-text")
    assert not page.is_visible("#confirm-yes")
    assert page.locator("#confirm-yes").bounding_box() is None
    page.screenshot(path="/tmp/hit-confirm-missing.png")
    press(page, "Escape")
    # The page ignores answer keys while a dialog is open.
    page.wait_for_selector("#confirm-submit:not([open])", state="attached")
    # Every item answered: now the dialog offers Submit.
    for _ in range(SENTENCES):
        press(page, "n", "j")
    from playwright.sync_api import expect

    # A locator, not wait_for_function: its polling evaluates a string, which the page's CSP refuses.
    expect(page.locator("fieldset.item.complete")).to_have_count(SENTENCES)
    # The page marks an item complete before its answer is stored: the test ends only once every save has
    # answered, or the live server would still hold an answer's row locks while the database is emptied.
    for position in range(SENTENCES):
        saved(page, position)
    press(page, "Enter")
    page.wait_for_selector("#confirm-submit[open]")
    assert page.is_visible("#confirm-yes")


def test_the_instructions_open_at_their_top_every_time(page, live_server, long_hit):
    open_hit(page, live_server, long_hit)
    for _ in range(2):
        press(page, "?")
        page.wait_for_selector("#instructions-dialog[open]")
        assert page.evaluate("document.getElementById('instructions-dialog').scrollTop") == 0
        heading = page.locator("#instructions-dialog h2").first
        assert heading.is_visible() and "Fact verification" in heading.inner_text()
        box, dialog = heading.bounding_box(), page.locator("#instructions-dialog").bounding_box()
        assert dialog["y"] <= box["y"] < dialog["y"] + dialog["height"]
        page.screenshot(path="/tmp/hit-instructions.png")
        # Scrolled down and closed: the next opening starts at the top again.
        page.evaluate("document.getElementById('instructions-dialog').scrollTop = 10000")
        press(page, "Escape")
        page.wait_for_selector("#instructions-dialog:not([open])", state="attached")
