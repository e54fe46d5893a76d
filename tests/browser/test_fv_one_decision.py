"""Fact verification with the AI judgment shown is one decision, in Debian's Chromium: agreeing or disagreeing with
the AI answers the error question too, an error answer answers whether the AI is right, and the key legend says so;
every save carries a pair that does not contradict itself."""

import os

import pytest
from playwright.sync_api import expect

from annotation.models import Label

from .test_hit_pages import log_in_by_keyboard, press, saved, tab_to, work  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("FINEGRAIN_SHOTS", "/tmp/shots")


def pair(position: int) -> tuple:
    label = Label.objects.get(unit__position=position, unit__task="fv")
    return label.ai_right, label.has_error


def test_one_key_answers_both_questions(page, live_server, work):  # noqa: F811
    log_in_by_keyboard(page, live_server, "annie")
    tab_to(page, "Start next fact verification HIT")
    with page.expect_navigation():
        press(page, "Enter")
    page.wait_for_selector("#item-0.current")
    expect(page.locator("#shortcuts")).to_contain_text("either also answers the error question")
    # The AI said "no error" on every sentence here: agreeing (r) is "no error".
    expect(page.locator("#item-0")).to_contain_text("Right: no error")
    press(page, "r")
    saved(page, 0)
    assert page.is_checked("input[name=u0-has_error][value=no]")
    assert pair(0) == (True, False)

    # An error answer (y) makes the AI wrong; then agreeing with the AI (r) takes the error back, and w again.
    press(page, "j", "y")
    expect(page.locator("#state-1")).to_contain_text("Saved · still to answer: which error types?", timeout=5000)
    assert page.is_checked("input[name=u1-ai_right][value=no]")
    assert pair(1) == (False, True)
    press(page, "r")
    expect(page.locator("input[name=u1-has_error][value=no]")).to_be_checked()
    saved(page, 1)
    assert pair(1) == (True, False)
    press(page, "w", "2")
    expect(page.locator("input[name=u1-has_error][value=yes]")).to_be_checked()
    # The state read "Saved ✓" before these keys as well: wait for the stored pair itself.
    for _ in range(50):
        if pair(1) == (False, True):
            break
        page.wait_for_timeout(100)
    expect(page.locator("#state-1")).to_contain_text("Saved ✓", timeout=5000)
    assert pair(1) == (False, True)

    # A click on one question fills the other as well.
    page.check("input[name=u2-has_error][value=no]")
    expect(page.locator("input[name=u2-ai_right][value=yes]")).to_be_checked()
    saved(page, 2)
    assert pair(2) == (True, False)
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, "fv-form.png"), full_page=True)
