"""The analytics page in a real browser after `run_evaluator --evaluator sbertscore` on the demo project."""

import pytest
from django.core.management import call_command

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_demo_shows_the_sbertscore_benchmark(page, live_server):
    call_command("load_demo", "--password", "pw-demo-123", verbosity=0)
    call_command("run_evaluator", "--project", "demo", "--evaluator", "sbertscore", verbosity=0)
    log_in(page, live_server, "manager", "pw-demo-123")

    # The demo has no human labels: the evaluator's own means per summarizer, and why nothing is correlated.
    page.goto(f"{live_server.url}/projects/demo/analytics/#evaluators")
    # Never computed: a page view starts nothing, the manager asks.
    assert "Not computed yet" in page.inner_text("main")
    page.get_by_role("button", name="Compute the analytics figures").click()
    section = page.locator("section#evaluators")
    assert "No human scores yet, so nothing to correlate" in section.inner_text()
    means = section.locator("table.evaluator-means tbody tr")
    assert means.count() == 3  # the demo's three summarizers
    cells = means.first.locator("td")
    assert cells.nth(1).inner_text() == "6" and 0 < float(cells.nth(2).inner_text()) <= 1  # six summaries; precision
    assert section.locator("table.evaluator-table").count() == 0 and section.locator("svg.chart").count() == 0
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    section.screenshot(path=page_path("analytics-evaluators-before-labels.png"))

    call_command("simulate_annotations", "--project", "demo", verbosity=0)
    page.reload()  # goto to the same address and fragment would not load the page again
    # The labels changed: the page hides the older figures and offers to compute them again; the job's end reloads it.
    assert "The data changed after the last computation of the analytics figures" in page.inner_text("main")
    page.get_by_role("button", name="Update the analytics figures").click()
    table = section.locator("table.evaluator-table")
    table.locator("tbody tr").first.wait_for(timeout=60_000)
    assert table.locator("tbody tr").count() == 3  # faithfulness, completeness, composite
    assert table.locator("tbody tr").first.inner_text().startswith("faithfulness\tprecision")
    detection = section.locator("table.detection-table tbody tr")
    assert detection.count() == 1
    # The correlations with their intervals, and the ROC curve when the test half has both classes (the simulated
    # labels' attention checks are drawn at random, so the demo's halves differ from run to run).
    roc_auc = detection.locator("td").nth(5).inner_text()
    assert section.locator("svg.chart").count() == (1 if roc_auc == "—" else 2)
    assert "Documents split 50/50 at random (seed 0)" in section.inner_text()
    ticks = section.locator("svg.chart").first.locator("text.axis-label[text-anchor=middle]").evaluate_all(
        "texts => texts.map(text => text.textContent)")  # SVG text has no innerText
    assert ticks == ["-1.0", "-0.5", "0.0", "0.5", "1.0"]
    # Agreement's headline on each unit's first two labels, with all labels beside it; Dawid-Skene beside the
    # majority, per task, with its per-annotator table; none of it wider than the window.
    assert ("first two labels of each unit: comparable with fixed designs and with the paper"
            in page.inner_text("section#agreement"))
    assert page.locator("section#agreement table.agreement-table").count() == 3
    second_opinion = page.locator("section#dawid-skene")
    assert "Majority vote is the label of record" in second_opinion.inner_text()
    assert second_opinion.locator("p.ds-summary").count() == second_opinion.locator("table.ds-annotators").count() == 3
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    second_opinion.screenshot(path=page_path("analytics-dawid-skene.png"))
    section.scroll_into_view_if_needed()
    screenshot(page, "analytics-evaluators.png")
    section.screenshot(path=page_path("analytics-evaluators-section.png"))


def page_path(name: str) -> str:
    import os

    from .conftest import SCREENSHOTS

    os.makedirs(SCREENSHOTS, exist_ok=True)
    return os.path.join(SCREENSHOTS, name)
