"""The analytics page in a real browser after `run_evaluator --evaluator sbertscore` on the demo project."""

import pytest
from django.core.management import call_command

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_demo_shows_the_sbertscore_benchmark(page, live_server):
    call_command("load_demo", "--password", "pw-demo-123", verbosity=0)
    call_command("run_evaluator", "--project", "demo", "--evaluator", "sbertscore", verbosity=0)
    call_command("simulate_annotations", "--project", "demo", verbosity=0)  # the demo has no human labels
    log_in(page, live_server, "manager", "pw-demo-123")

    page.goto(f"{live_server.url}/projects/demo/analytics/#evaluators")

    section = page.locator("section#evaluators")
    table = section.locator("table.evaluator-table")
    assert table.locator("tbody tr").count() == 3  # faithfulness, completeness, composite
    assert table.locator("tbody tr").first.inner_text().startswith("faithfulness\tprecision")
    detection = section.locator("table.detection-table tbody tr")
    assert detection.count() == 1
    # The correlations with their intervals, and the ROC curve when the test half has both classes (the simulated
    # labels' attention checks are drawn at random, so the demo's halves differ from run to run).
    roc_auc = detection.locator("td").nth(5).inner_text()
    assert section.locator("svg.chart").count() == (1 if roc_auc == "—" else 2)
    assert "Documents split 50/50 at random (seed 0)" in section.inner_text()
    section.scroll_into_view_if_needed()
    screenshot(page, "analytics-evaluators.png")
    section.screenshot(path=page_path("analytics-evaluators-section.png"))


def page_path(name: str) -> str:
    import os

    from .conftest import SCREENSHOTS

    os.makedirs(SCREENSHOTS, exist_ok=True)
    return os.path.join(SCREENSHOTS, name)
