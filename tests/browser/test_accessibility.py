"""axe-core on the annotator's and the manager's pages, in Debian's Chromium: no serious or critical violation of
WCAG 2.1 A and AA.

axe reports what it cannot decide (colour contrast over a gradient or under another element) as "incomplete", not
as a violation: those few are computed by hand from app.css (see the key caps and the sentence numbers below)."""

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.core.management import call_command

from annotation.crowd.links import link_create, link_token
from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from corpus.models import Membership, Project
from tests.conftest import numbers_now
from tests.work import annotator_for, complete, import_generated

from .conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WCAG_21_A_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = {"serious", "critical"}
SUMMARY_SENTENCES = 6
AXE = Axe()


def problems(page) -> list[str]:
    """Each serious or critical violation as one line: the rule, its help and the first elements it names."""
    results = AXE.run(page, options={"runOnly": {"type": "tag", "values": WCAG_21_A_AA},
                                     "resultTypes": ["violations"]})
    found = []
    for violation in results.response["violations"]:
        if violation["impact"] in BLOCKING:
            targets = [", ".join(node["target"]) for node in violation["nodes"][:3]]
            found.append(f"{violation['id']} ({violation['impact']}): {violation['help']} at {targets}")
    return found


@pytest.fixture
def annotator_work(django_user_model):
    """Two documents of 120 sentences, a summary of six sentences each; the first document's key-facts validated by
    another annotator: an FV, a KV and a KA HIT (a grid) wait for the annotator "ada"."""
    project = import_generated(Project.objects.create(slug="axe", name="Axe study"), documents=2, summarizers=1,
                               sentences=SUMMARY_SENTENCES, words_per_sentence=14, document_sentences=120)
    Project.objects.filter(pk=project.pk).update(annotators_per_unit=1)
    project.refresh_from_db()
    for task in ("fv", "kv"):
        build_hits(project, task)
    ada = django_user_model.objects.create_user("ada", password="pw-ada-123")
    Membership.objects.create(project=project, user=ada, role=Membership.Role.ANNOTATOR)
    helper = annotator_for(django_user_model.objects.create_user("kim"))
    complete(reserve_next_hit(helper, project, "kv", confirmed=True), yes=True)  # Builds the first KA HIT.
    return project


def open_next(page, live_server, project, user, task: str) -> None:
    assignment = reserve_next_hit(annotator_for(user), project, task, confirmed=True)
    page.goto(f"{live_server.url}/work/hits/{assignment.public_id}/")
    page.wait_for_selector("fieldset.item.current")


def test_the_annotators_pages_have_no_serious_violation(page, live_server, annotator_work, django_user_model):
    log_in(page, live_server, "ada", "pw-ada-123")
    found = {}
    page.goto(f"{live_server.url}/work/")
    found["home"] = problems(page)
    for task in ("fv", "kv", "ka"):
        open_next(page, live_server, annotator_work, django_user_model.objects.get(username="ada"), task)
        found[task] = problems(page)
    assert found == {name: [] for name in found}


def test_the_screening_test_has_no_serious_violation(page, live_server):
    project = import_generated(Project.objects.create(slug="screen", name="Screen"), documents=1, summarizers=1)
    build_hits(project, "fv")
    link = link_create(project=project, task="fv", label="Expert 1", days=7)
    page.goto(f"{live_server.url}/crowd/link/{link_token(link)}/")
    assert "/screening/" in page.url
    assert problems(page) == []


@pytest.mark.slow
def test_the_managers_pages_have_no_serious_violation(page, live_server):
    call_command("load_demo", "--password", "pw-demo-123", verbosity=0)
    call_command("simulate_annotations", "--project", "demo", verbosity=0)
    demo = Project.objects.get(slug="demo")
    for kind in ("review_tally", "analytics"):  # the pages with the numbers a manager asked for
        numbers_now(demo, kind)
    log_in(page, live_server, "manager", "pw-demo-123")
    found = {}
    page.goto(f"{live_server.url}/projects/demo/")
    found["project"] = problems(page)
    page.goto(f"{live_server.url}/projects/demo/review/")
    found["review"] = problems(page)
    page.goto(f"{live_server.url}/projects/demo/analytics/")
    page.locator("section#paper-tables div.paper-table").first.wait_for(timeout=120_000)
    found["analytics"] = problems(page)
    assert found == {name: [] for name in found}
