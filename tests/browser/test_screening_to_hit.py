"""A private-link worker in Chromium: the link, the screening test, and straight on to the first HIT, without an
account or a log-in page on the way."""

import pytest

from annotation.crowd.links import link_create, link_token
from annotation.models import Assignment
from annotation.quality.qualification import QUESTIONS
from corpus.models import Project
from tests.work import build_all, import_small

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_link_worker_goes_from_the_screening_test_to_the_first_hit(page, live_server):
    project = import_small(Project.objects.create(slug="study", name="Study"))
    build_all(project)
    link = link_create(project=project, task="fv", label="Expert 1", days=7)
    page.goto(f"{live_server.url}/crowd/link/{link_token(link)}/")
    assert "/work/study/screening/" in page.url
    page.screenshot(path="/tmp/screening.png", full_page=True)
    # The instructions open in a new tab, without a log-in.
    with page.context.expect_page() as opened:
        page.click("#screening-instructions")
    instructions = opened.value
    instructions.wait_for_load_state()
    assert "/accounts/login/" not in instructions.url and "Fact verification" in instructions.inner_text("main")
    instructions.close()
    for question in QUESTIONS:
        page.check(f"input[name={question.key}][value={question.answer}]")
    with page.expect_navigation():
        page.click("button[type=submit]")
    assignment = Assignment.objects.get(annotator__provider="link")
    assert f"/work/hits/{assignment.public_id}/" in page.url and "/accounts/login/" not in page.url
    page.wait_for_selector("#item-0.current")
    assert page.locator("fieldset.item").count() == assignment.hit.units.count()
    page.screenshot(path="/tmp/screening-then-hit.png", full_page=True)
