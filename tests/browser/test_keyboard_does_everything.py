"""The keyboard does everything, in Debian's Chromium: f opens the current item's flag and Ctrl+Enter saves it (both in
the key legend); the key-fact alignment grid uses the width at 1280 px, its source folded away with s (remembered),
and draws the current cell's row and column; the cost preview opens under its button and nothing moves."""

import json
import os

import pytest
from playwright.sync_api import expect

from annotation.models import ItemFlag
from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from corpus.importing import import_dataset
from corpus.models import Membership, Project
from tests.work import annotator_for, complete, import_generated, may_create_projects

from .conftest import log_in
from .test_hit_pages import log_in_by_keyboard, press, start_next_fv_hit, work  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("FINEGRAIN_SHOTS", "/tmp/shots")

# A typical summary: six sentences of about seventeen words (the demo's summaries have three to six).
WORDS = ("the regional council approved a new plan for the old harbour after a long public debate about its "
         "rising costs and the jobs").split()
GRID_ROW = {
    "uid": "wide-1", "doc_id": "wide-1", "source": "T", "domain": "news", "input_type": "non-dialogue",
    "document": " ".join(f"Source sentence {n} says that " + " ".join(WORDS[:14]) + "." for n in range(60)),
    "model": "m",
    "summary": " ".join(f"Sentence {n} says that " + " ".join(WORDS[n:n + 14]) + "." for n in range(1, 7)),
    "pred_keyfact": [f"The council approved plan {n} for the harbour after a debate." for n in range(1, 9)],
}


def test_f_opens_the_current_items_flag_and_ctrl_enter_saves_it(page, live_server, work):  # noqa: F811
    start_next_fv_hit(page, live_server)
    legend = page.locator("#shortcuts")
    expect(legend).to_contain_text("f flag the item: opens its comment (Ctrl+Enter saves it)")
    press(page, "j", "f")
    expect(page.locator("#flag-1")).to_have_attribute("open", "")
    assert page.evaluate("document.activeElement.id") == "u1-flag"
    page.keyboard.type("Garbled: y n j k f")  # Shortcut letters are text here.
    press(page, "Control+Enter")
    expect(page.locator("#flag-state-1")).to_contain_text("Flag saved ✓", timeout=5000)
    flag = ItemFlag.objects.get()
    assert (flag.unit.position, flag.comment) == (1, "Garbled: y n j k f")
    assert not page.is_checked("input[name=u1-has_error][value=no]")
    press(page, "Escape")
    expect(page.locator("#flag-1")).not_to_have_attribute("open", "")
    press(page, "n")  # Back on the item: the keys answer it.
    expect(page.locator("input[name=u1-has_error][value=no]")).to_be_checked()
    expect(page.locator("#state-1")).to_contain_text("Saved", timeout=5000)


@pytest.fixture
def wide_grid(django_user_model):
    project = Project.objects.create(slug="wide", name="Wide grid", annotators_per_unit=1, attention_check_rate=0)
    import_dataset(project=project, data=json.dumps(GRID_ROW).encode(), filename="wide.jsonl")
    build_hits(project, "kv")
    user = django_user_model.objects.create_user("annie", password="pw-annie-123")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    complete(reserve_next_hit(annotator_for(user), project, "kv", confirmed=True), yes=True)
    return reserve_next_hit(annotator_for(user), project, "ka", confirmed=True)


def columns_in_view(page) -> int:
    """How many sentence columns the grid shows whole without scrolling sideways."""
    return page.evaluate("""() => {
        const wrap = document.querySelector(".ka-matrix-wrap").getBoundingClientRect();
        return Array.from(document.querySelectorAll("#ka-matrix thead .ka-col"))
            .filter(th => th.getBoundingClientRect().right <= wrap.right + 0.5).length;
    }""")


def test_the_grid_uses_the_width_at_1280_px_and_draws_the_current_row_and_column(page, live_server, wide_grid):
    log_in_by_keyboard(page, live_server, "annie")
    page.goto(f"{live_server.url}/work/hits/{wide_grid.public_id}/")
    page.wait_for_selector("#item-0.current")
    assert page.viewport_size["width"] == 1280
    expect(page.locator("#ka-matrix thead .ka-col")).to_have_count(6)
    expect(page.locator("#shortcuts")).to_contain_text("s hide or show the source")
    press(page, "ArrowDown", "ArrowRight")  # Key-fact 2, sentence 2.
    page.wait_for_selector("#item-7.current")
    assert page.locator("#ka-matrix .ka-current").evaluate_all("els => els.map(e => e.textContent.trim().slice(0, 2))") \
        == ["S2", "K2"]
    head = page.locator("#ka-matrix thead .ka-col").nth(1)
    other = page.locator("#ka-matrix thead .ka-col").nth(2)
    assert head.evaluate("e => getComputedStyle(e).backgroundColor") != other.evaluate(
        "e => getComputedStyle(e).backgroundColor")
    assert columns_in_view(page) == 6  # All six beside the source, narrow enough for them.
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, "ka-grid-1280-source-shown.png"))

    # Folded away, the source leaves the whole width to the grid, nothing to scroll sideways.
    press(page, "s")
    expect(page.get_by_role("button", name="Show the source")).to_have_attribute("aria-expanded", "false")
    assert columns_in_view(page) == 6
    assert page.evaluate("(() => { const w = document.querySelector('.ka-matrix-wrap');"
                         " return w.scrollWidth <= w.clientWidth; })()")
    page.screenshot(path=os.path.join(SHOTS, "ka-grid-1280.png"))
    # Going back through the cells by Tab from the last one, the grid scrolls up and left: no focused answer is ever
    # under the sticky headings (or the submit bar below).
    page.focus("#item-47")
    hidden = []
    for _ in range(2 * 48):  # Two stops a cell: its answers and its flag.
        press(page, "Shift+Tab")
        place = page.evaluate("""() => {
            const el = document.activeElement;
            if (!el.closest("#ka-matrix td")) return null;
            const box = el.getBoundingClientRect();
            const head = document.querySelector("#ka-matrix thead").getBoundingClientRect();
            const side = document.querySelector("#ka-matrix .ka-corner").getBoundingClientRect();
            const bar = document.querySelector(".submit-bar").getBoundingClientRect();
            return box.top < head.bottom - 0.5 || box.left < side.right - 0.5 || box.bottom > bar.top + 0.5
                ? el.closest("td").querySelector("fieldset").id : null;
        }""")
        if place:
            hidden.append(place)
    assert hidden == []
    # The page remembers; the button (or s again) brings the source back.
    page.reload()
    page.wait_for_selector("#item-0.current")
    assert columns_in_view(page) == 6
    assert not page.is_visible("#source-body")
    page.get_by_role("button", name="Show the source").click()
    expect(page.locator("#source-body")).to_be_visible()


def test_the_cost_preview_opens_under_its_button_and_nothing_moves(page, live_server, django_user_model):
    project = import_generated(Project.objects.create(slug="cost", name="Cost study"), documents=2, summarizers=1)
    build_hits(project, "fv")
    boss = may_create_projects(django_user_model.objects.create_user("boss", password="boss-pass-123"))
    Membership.objects.create(project=project, user=boss, role=Membership.Role.MANAGER)
    log_in(page, live_server, "boss", "boss-pass-123")
    page.goto(f"{live_server.url}/projects/cost/settings/")
    page.fill("#id_hourly_wage_usd", "16.32")
    button = page.get_by_role("button", name="Preview the cost")
    button.scroll_into_view_if_needed()
    before = (page.evaluate("window.scrollY"), button.bounding_box()["y"])
    button.click()
    preview = page.locator("#cost-preview")
    expect(preview).to_contain_text("→ $")
    after = (page.evaluate("window.scrollY"), page.get_by_role("button", name="Preview the cost").bounding_box())
    assert after[0] == before[0] and abs(after[1]["y"] - before[1]) < 1, "the page jumped"
    # Right under the button, and the keyboard focus is still on it (a second press previews again).
    gap = preview.bounding_box()["y"] - (after[1]["y"] + after[1]["height"])
    assert 0 <= gap < 40
    assert page.evaluate("document.activeElement.id") == "preview-cost"
    assert page.input_value("#id_hourly_wage_usd") == "16.32"
    # Nothing of the page's own text leaks out of a template comment beside the buttons.
    assert "{#" not in page.inner_text("form.settings")
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, "cost-preview.png"))
    page.mouse.wheel(0, 400)
    page.wait_for_timeout(200)
    page.screenshot(path=os.path.join(SHOTS, "cost-preview-below.png"))
