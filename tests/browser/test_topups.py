"""Labels per unit, in Chromium: a third annotator is handed the top-up HIT of the one sentence two others disagreed
on, sees it as any HIT, answers it with the keyboard, and the manager's cost page then shows what the adaptive
policy saved. Screenshots of the top-up HIT and the cost page go to screenshots/."""

import pytest

from annotation.models import Hit, UnitState
from annotation.redundancy import Verdict
from annotation.services.topups import topups_build
from corpus.models import Membership, Project, RedundancyPolicy
from tests.work import (
    add_assistance,
    annotator_for,
    build_all,
    crowd_annotator,
    first_round_hit,
    import_small,
    may_create_projects,
    work_next_hit,
)

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_third_annotator_settles_a_split_sentence_in_its_top_up_and_the_cost_page_shows_the_saving(
        page, live_server, django_user_model):
    project = Project.objects.create(slug="adaptive", name="Adaptive study",
                                     redundancy_policy=RedundancyPolicy.ADAPTIVE)
    import_small(project)
    add_assistance(project)
    build_all(project)
    hit = first_round_hit(project, "fv")
    split = hit.units.order_by("position").first()
    work_next_hit(crowd_annotator("ann", project), project, "fv")
    work_next_hit(crowd_annotator("bea", project), project, "fv", split=split)
    topups_build(project)
    topup = Hit.objects.get(project=project, round=1)
    for name, role in (("cid", Membership.Role.ANNOTATOR), ("boss", Membership.Role.MANAGER)):
        user = django_user_model.objects.create_user(name, password=f"pw-{name}-123")
        Membership.objects.create(project=project, user=user, role=role)
        if role == Membership.Role.MANAGER:
            may_create_projects(user)

    log_in(page, live_server, "cid", "pw-cid-123")
    page.goto(f"{live_server.url}/work/")
    with page.expect_navigation():
        page.get_by_role("button", name="Start next fact verification HIT").first.click()
    page.wait_for_selector("#item-0.current")
    # The top-up is a HIT like any other: the same page, the sentence as its first HIT showed it.
    assert topup.assignments.get().annotator == annotator_for(django_user_model.objects.get(username="cid"))
    assert split.text in page.inner_text("#item-0")
    assert "top-up" not in page.content().lower() and "round" not in page.inner_text("main").lower()
    screenshot(page, "hit-topup.png")
    page.wait_for_timeout(150)
    page.keyboard.press("w")
    page.keyboard.press("2")  # the AI is wrong: a relation error
    # Two answers, two saves: both must be in before the HIT is submitted, or it is refused as incomplete.
    page.wait_for_selector("input[name=u0-has_error][value=yes]:checked")
    page.wait_for_load_state("networkidle")
    page.wait_for_selector("#state-0:has-text('Saved')")
    page.keyboard.press("Enter")
    page.wait_for_selector("#confirm-submit[open]")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert UnitState.objects.get(unit=split).verdict == Verdict.SETTLED

    page.context.clear_cookies()
    log_in(page, live_server, "boss", "pw-boss-123")
    page.goto(f"{live_server.url}/projects/{project.slug}/costs/")
    page.get_by_role("button", name="Compute the cost figures").click()  # never computed: the manager asks
    page.wait_for_selector("#money")
    assert "Saved so far" in page.inner_text("#money")
    assert page.inner_text("#saved") != "0.00 USD"
    screenshot(page, "costs.png")
