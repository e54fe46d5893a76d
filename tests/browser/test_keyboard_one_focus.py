"""One focus on the HIT page, in Debian's Chromium: the item the keys act on is the item holding the keyboard focus;
arrows on a radio choose among its answers; the annotator can switch the one-key shortcuts off and the page
remembers; every answer is named by its question; the source is a labelled region the keyboard reaches; Tab never
lands under the sticky submit bar; Esc closes every dialog and disclosure."""

import pytest
from playwright.sync_api import expect

from annotation.models import Label

from .test_hit_page_layout import SENTENCES, long_hit, open_hit  # noqa: F401 (the fixture)
from .test_hit_pages import log_in_by_keyboard, press, saved, start_next_fv_hit, work  # noqa: F401 (the fixture)
from .test_ka_matrix import ROW

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ACTIVE_ITEM = "(document.activeElement.closest('fieldset.item') || {}).id || null"


def current_items(page) -> list[str]:
    return page.locator("fieldset.item.current").evaluate_all("els => els.map(e => e.id)")


def tab_until(page, condition: str, limit: int = 80, key: str = "Tab") -> None:
    for _ in range(limit):
        page.keyboard.press(key)
        if page.evaluate(condition):
            return
    raise AssertionError(f"Tab never reached {condition}")


def test_the_current_item_is_the_focused_one_and_moving_either_moves_the_other(page, live_server, long_hit):  # noqa: F811
    open_hit(page, live_server, long_hit)
    # The page opens with the focus in the first item.
    assert page.evaluate(ACTIVE_ITEM) == "item-0"
    press(page, "j", "j")
    assert page.evaluate(ACTIVE_ITEM) == "item-2" and current_items(page) == ["item-2"]
    # Tab walks into the item's answers and on into the next item, which becomes the current one.
    tab_until(page, f"({ACTIVE_ITEM}) === 'item-3'")
    assert current_items(page) == ["item-3"]
    # The keys act where the focus is: n answers item 3.
    press(page, "n")
    saved(page, 3)
    assert Label.objects.get(unit__position=3).has_error is False
    # A click on another item's text moves both.
    page.click("#item-0 .target")
    assert page.evaluate(ACTIVE_ITEM) == "item-0" and current_items(page) == ["item-0"]
    # The item with the focus is drawn with a solid line; once the focus is elsewhere, the item the keys come back
    # to is dashed, and a key brings the focus back to it.
    assert page.locator("#item-0").evaluate("e => getComputedStyle(e).outlineStyle") == "solid"
    page.focus("#source")
    assert page.locator("#item-0").evaluate("e => getComputedStyle(e).outlineStyle") == "dashed"
    press(page, "j")
    assert page.evaluate(ACTIVE_ITEM) == "item-1" and current_items(page) == ["item-1"]
    assert page.locator("#item-1").evaluate("e => getComputedStyle(e).outlineStyle") == "solid"


def test_arrows_on_a_radio_choose_among_its_answers(page, live_server, long_hit):  # noqa: F811
    open_hit(page, live_server, long_hit)
    page.focus("input[name=u0-has_error][value=yes]")
    press(page, "Space")
    press(page, "ArrowDown")  # To "No", as on any radio group; the page does not move to the next item.
    expect(page.locator("input[name=u0-has_error][value=no]")).to_be_checked()
    assert current_items(page) == ["item-0"] and page.evaluate(ACTIVE_ITEM) == "item-0"
    saved(page, 0)
    assert Label.objects.get(unit__position=0).has_error is False
    # In the source, arrows scroll the text and leave the items alone.
    page.focus("#source")
    before = page.evaluate("document.getElementById('source').scrollTop")
    press(page, "ArrowDown", "ArrowDown", "ArrowDown")
    page.wait_for_timeout(300)  # smooth scrolling
    assert page.evaluate("document.getElementById('source').scrollTop") > before
    assert current_items(page) == ["item-0"]


def test_the_annotator_switches_the_shortcuts_off_and_the_page_remembers(page, live_server, long_hit):  # noqa: F811
    open_hit(page, live_server, long_hit)
    switch = page.get_by_role("checkbox", name="Keyboard shortcuts")
    expect(switch).to_be_checked()
    switch.uncheck()
    page.focus("#item-0")
    press(page, "n", "j")
    page.wait_for_timeout(300)
    assert current_items(page) == ["item-0"] and not page.is_checked("input[name=u0-has_error][value=no]")
    page.reload()
    page.wait_for_selector("#item-0.current")
    expect(page.get_by_role("checkbox", name="Keyboard shortcuts")).not_to_be_checked()
    press(page, "n")
    page.wait_for_timeout(300)
    assert not page.is_checked("input[name=u0-has_error][value=no]")
    assert not Label.objects.exists()
    page.get_by_role("checkbox", name="Keyboard shortcuts").check()
    page.focus("#item-0")
    press(page, "n")
    saved(page, 0)


def test_every_answer_is_named_by_its_question_and_the_source_is_a_region(page, live_server, work):  # noqa: F811
    start_next_fv_hit(page, live_server)
    item = page.locator("#item-1")
    for question in ("Is the AI right?", "Does the sentence have a factual error?"):
        group = item.get_by_role("radiogroup", name=question)
        expect(group).to_have_count(1)
        expect(group.get_by_role("radio")).to_have_count(2)
    expect(item.get_by_role("radiogroup", name="Does the sentence have a factual error?")
           .get_by_role("radio", name="Yes", exact=True)).to_have_count(1)
    press(page, "j", "y")  # The error types show once the sentence has an error.
    # Every save has answered before the test ends (the live server would hold row locks while the database is
    # emptied).
    expect(page.locator("#state-1")).to_contain_text("Saved", timeout=5000)
    expect(item.get_by_role("group", name="Error types:").get_by_role("checkbox")).to_have_count(4)
    expect(page.get_by_role("radiogroup", name="Does the sentence have a factual error?")).to_have_count(3)

    source = page.get_by_role("region", name="Source text")
    expect(source).to_have_attribute("id", "source")
    # The keyboard reaches it, going back from the first item.
    page.focus("#item-0")
    tab_until(page, "document.activeElement.id === 'source'", key="Shift+Tab")


def test_tab_never_lands_under_the_submit_bar(chromium, live_server, long_hit):  # noqa: F811
    # Wide: the answers column scrolls; narrow (one column): the window does.
    for viewport in ({"width": 1280, "height": 900}, {"width": 760, "height": 700}):
        context = chromium.new_context(viewport=viewport)
        page = context.new_page()
        try:
            open_hit(page, live_server, long_hit)
            page.focus("#item-0")
            hidden = []
            for _ in range(4 * SENTENCES + 10):
                page.keyboard.press("Tab")
                place = page.evaluate("""() => {
                    const el = document.activeElement;
                    if (!el.closest("#answers") || el.closest(".submit-bar")) return null;
                    const box = el.getBoundingClientRect();
                    const bar = document.querySelector(".submit-bar").getBoundingClientRect();
                    return {what: el.outerHTML.slice(0, 80), under: box.bottom > bar.top + 0.5};
                }""")
                if place is None:
                    continue
                if place["under"]:
                    hidden.append(place["what"])
            assert hidden == [], f"at {viewport['width']} px, focused under the bar: {hidden[:3]}"
        finally:
            context.close()


def test_esc_closes_every_dialog_and_disclosure(page, live_server, work):  # noqa: F811
    start_next_fv_hit(page, live_server)
    # The flag of an item: Esc closes it, even while typing, and the focus goes back to its item.
    page.click("#flag-1 summary")
    page.focus("#u1-flag")
    page.keyboard.type("half a comment")
    press(page, "Escape")
    expect(page.locator("#flag-1")).not_to_have_attribute("open", "")
    assert page.evaluate(ACTIVE_ITEM) == "item-1"
    # Returning the HIT asks first; Esc answers "no".
    page.click("#return-hit summary")
    expect(page.locator("#return-yes")).to_be_visible()
    press(page, "Escape")
    expect(page.locator("#return-yes")).to_be_hidden()
    assert page.evaluate("document.activeElement.textContent.trim()") == "Return this HIT"
    # The dialogs.
    press(page, "Escape")  # Nothing open: nothing happens.
    page.focus("#item-0")
    press(page, "?")
    expect(page.locator("#instructions-dialog")).to_be_visible()
    press(page, "Escape")
    expect(page.locator("#instructions-dialog")).to_be_hidden()
    press(page, "Enter")
    expect(page.locator("#confirm-submit")).to_be_visible()
    press(page, "Escape")
    expect(page.locator("#confirm-submit")).to_be_hidden()


def test_the_grid_names_each_cell_by_its_question(page, live_server, django_user_model):
    import json

    from annotation.services.assignment import reserve_next_hit
    from annotation.services.hits import build_hits
    from corpus.importing import import_dataset
    from corpus.models import Membership, Project
    from tests.work import annotator_for, complete

    project = Project.objects.create(slug="grid", name="Grid", annotators_per_unit=1, attention_check_rate=0)
    import_dataset(project=project, data=json.dumps(ROW).encode(), filename="grid.jsonl")
    build_hits(project, "kv")
    user = django_user_model.objects.create_user("annie", password="pw-annie-123")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    complete(reserve_next_hit(annotator_for(user), project, "kv", confirmed=True), yes=True)
    assignment = reserve_next_hit(annotator_for(user), project, "ka", confirmed=True)
    log_in_by_keyboard(page, live_server, "annie")
    page.goto(f"{live_server.url}/work/hits/{assignment.public_id}/")
    page.wait_for_selector("#item-0.current")
    group = page.get_by_role("radiogroup", name="Can key-fact 2 be inferred from sentence 3?")
    expect(group.get_by_role("radio", name="Yes", exact=True)).to_have_count(1)
    # Arrows move through the grid from a cell, and choose an answer on a radio.
    press(page, "ArrowDown", "ArrowRight", "ArrowRight")
    assert page.evaluate(ACTIVE_ITEM) == "item-7"
    press(page, "Tab")  # Into the cell: its "Yes".
    press(page, "ArrowRight")
    expect(group.get_by_role("radio", name="No", exact=True)).to_be_checked()
    assert current_items(page) == ["item-7"]
    saved(page, 7)
