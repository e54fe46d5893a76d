"""The key-fact alignment HIT as a grid, in Debian's Chromium: arrows move along rows and columns, the headings stay
in view while the grid scrolls, and the source shows the ranked highlights of the cell in focus."""

import json

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment
from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from corpus.importing import import_dataset
from corpus.models import Membership, Project
from tests.work import annotator_for, complete

from .conftest import screenshot
from .test_hit_pages import log_in_by_keyboard

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FACTS = [f"The council approved plan number {n} for the harbour." for n in range(1, 6)]
ROW = {
    "uid": "grid-1", "doc_id": "grid-1", "source": "T", "domain": "news", "input_type": "non-dialogue",
    "document": " ".join(f"Sentence {n} of the source says the council approved plan number {n}." for n in range(1, 9)),
    "model": "m", "summary": " ".join(f"The summary's sentence {n} mentions plan {n} and the harbour."
                                      for n in range(1, 6)),
    "pred_keyfact": FACTS,
}


def test_arrows_move_through_the_grid_and_the_headings_stay_in_view(page, live_server, django_user_model):
    project = Project.objects.create(slug="grid", name="Grid", annotators_per_unit=1, attention_check_rate=0)
    import_dataset(project=project, data=json.dumps(ROW).encode(), filename="grid.jsonl")
    build_hits(project, "kv")
    user = django_user_model.objects.create_user("annie", password="pw-annie-123")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    complete(reserve_next_hit(annotator_for(user), project, "kv", confirmed=True), yes=True)  # Five key-facts, all useful.
    log_in_by_keyboard(page, live_server, "annie")
    page.set_viewport_size({"width": 1100, "height": 600})
    page.goto(f"{live_server.url}/work/")
    with page.expect_navigation():
        page.click("text=Start next key-fact alignment HIT")
    expect(page.locator("#ka-matrix tbody tr")).to_have_count(5)
    expect(page.locator("#ka-matrix thead .ka-col")).to_have_count(5)
    page.wait_for_selector("#item-0.current")
    page.keyboard.press("ArrowDown")  # Key-fact 2, sentence 1.
    page.wait_for_selector("#item-5.current")
    page.keyboard.press("ArrowRight")  # Key-fact 2, sentence 2.
    page.wait_for_selector("#item-6.current")
    page.keyboard.press("y")  # Answers and moves on along the row.
    page.wait_for_selector("#item-7.current")
    page.keyboard.press("ArrowUp")
    page.wait_for_selector("#item-2.current")

    wrap = page.locator(".ka-matrix-wrap")
    wrap.evaluate("el => { el.scrollTop = el.scrollHeight; el.scrollLeft = el.scrollWidth; }")
    box, head, row_head = (wrap.bounding_box(), page.locator("#ka-matrix thead .ka-col").last.bounding_box(),
                           page.locator("#ka-matrix .ka-rowhead").last.bounding_box())
    # Scrolled to the far corner, the sentence headings are still at the grid's top and the key-facts at its left
    # (without sticky headings they would have scrolled out, above and to the left of the grid).
    assert box["y"] <= head["y"] < box["y"] + 12
    assert box["x"] <= row_head["x"] < box["x"] + 12
    screenshot(page, "hit-ka-grid.png")
    assignment = Assignment.objects.get(hit__task="ka")
    assert [label.unit.position for label in assignment.labels.all()] == [6]
