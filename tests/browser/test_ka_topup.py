"""Key-fact alignment under the adaptive policy, in Chromium: a third annotator is handed the top-up HIT of the pair two
others disagreed on, sees it as a short list of key-fact and sentence pairs (not a grid), answers every item with
the keyboard and submits; the pair settles. A screenshot of the HIT goes to screenshots/hit-ka-topup.png."""

import pytest
from playwright.sync_api import expect

from annotation.models import Hit, UnitState
from annotation.redundancy import Verdict
from annotation.services.topups import topups_build
from corpus.models import Membership, Project, RedundancyPolicy
from tests.quality.conftest import with_checks
from tests.work import (
    add_assistance,
    annotator_for,
    build_all,
    crowd_annotator,
    first_round_hit,
    import_small,
    work_next_hit,
)

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_third_annotator_settles_a_split_pair_in_a_list_with_the_keyboard(page, live_server, django_user_model):
    project = Project.objects.create(slug="adaptive", name="Adaptive study",
                                     redundancy_policy=RedundancyPolicy.ADAPTIVE)
    import_small(project)
    add_assistance(project)
    build_all(project)
    for name in ("k1", "k2"):
        work_next_hit(crowd_annotator(name, project), project, "kv")
    grid = first_round_hit(project, "ka")
    split = grid.units.order_by("position").first()
    with_checks(project, 0.2)
    work_next_hit(crowd_annotator("ann", project), project, "ka")
    # Tasks run in process: bea's submission queues the top-up job, which builds the HIT once it commits.
    work_next_hit(crowd_annotator("bea", project), project, "ka", split=split)
    topups_build(project)
    topup = Hit.objects.get(project=project, task="ka", round=1)
    units = list(topup.units.order_by("position").select_related("attention_check"))
    assert len(units) >= 2  # the pair and at least one check
    user = django_user_model.objects.create_user("cid", password="pw-cid-123")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)

    page.set_viewport_size({"width": 1280, "height": 800})
    log_in(page, live_server, "cid", "pw-cid-123")
    page.goto(f"{live_server.url}/work/")
    with page.expect_navigation():
        page.get_by_role("button", name="Start next key-fact alignment HIT").first.click()
    assert topup.assignments.get().annotator == annotator_for(user)
    expect(page.locator("#answers fieldset.ka-pair")).to_have_count(len(units))
    expect(page.locator("#ka-matrix")).to_have_count(0)
    page.wait_for_selector("#item-0.current")
    text = page.inner_text("main")
    assert "Can the key-fact be inferred from this sentence?" in text and "Summary sentence" in text
    assert "top-up" not in page.content().lower() and "round" not in text.lower()
    screenshot(page, "hit-ka-topup.png")

    # The split pair gets "no" (cid sides with bea), every check its expected "no" too; y/n move on by themselves,
    # so j is pressed only to come back to the first item after it.
    page.wait_for_timeout(150)
    for position, unit in enumerate(units):
        page.wait_for_selector(f"#item-{position}.current")
        page.keyboard.press("n" if unit.origin_id == split.pk or hasattr(unit, "attention_check") else "y")
        page.wait_for_selector(f"#state-{position}:has-text('Saved')")
    page.keyboard.press("k")
    page.wait_for_selector(f"#item-{len(units) - 2}.current")
    page.keyboard.press("j")
    page.wait_for_selector(f"#item-{len(units) - 1}.current")
    expect(page.locator("#answered-count")).to_have_text(str(len(units)))
    page.keyboard.press("Enter")
    page.wait_for_selector("#confirm-submit[open]")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    state = UnitState.objects.get(unit=split)
    assert (state.verdict, state.counted, state.yes) == (Verdict.SETTLED, 3, 1)
