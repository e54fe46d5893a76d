"""An annotator flags an item for the manager and then returns the HIT, in Debian's Chromium; the manager reads the
flag on the HIT's page."""

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, ItemFlag

from .conftest import screenshot
from .test_hit_pages import log_in_by_keyboard, work  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_item_is_flagged_then_the_hit_is_returned_after_saying_yes(page, live_server, work):  # noqa: F811
    log_in_by_keyboard(page, live_server, "annie")
    page.goto(f"{live_server.url}/work/")
    with page.expect_navigation():
        page.click("text=Start next fact verification HIT")
    page.click("#flag-1 summary")
    page.focus("#u1-flag")
    # Letters that are shortcuts elsewhere on the page (y, n, r, w, j, k) are typed into the comment.
    page.keyboard.type("Unclear: which weekday? y n r w j k")
    page.click("#flag-1 button")
    expect(page.locator("#flag-state-1")).to_contain_text("Flag saved ✓", timeout=5000)
    assert ItemFlag.objects.get().comment == "Unclear: which weekday? y n r w j k"
    assert page.locator("#state-1").inner_text() == "Not answered yet"  # A flag is not an answer.

    expect(page.locator("#return-yes")).to_be_hidden()
    page.click("#return-hit summary")
    expect(page.locator(".return-confirm")).to_contain_text("Return it? It goes back to other annotators")
    screenshot(page, "hit-return-confirm.png")
    with page.expect_navigation():
        page.click("#return-yes")
    assert Assignment.objects.get().status == Assignment.Status.RETURNED
    expect(page.locator("table.history")).to_contain_text("Returned")
    screenshot(page, "work-home-history.png")

    page.context.clear_cookies()
    log_in_by_keyboard(page, live_server, "manny")
    flag = ItemFlag.objects.get()
    page.goto(f"{live_server.url}/projects/lib/hits/{flag.unit.hit.public_id}/")
    expect(page.locator(".flagged")).to_contain_text("Unclear: which weekday?")
