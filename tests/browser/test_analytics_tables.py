"""The paper's result tables on the analytics page in a real browser, after the demo project's labels are simulated."""

import os

import pytest
from django.core.management import call_command

from corpus.models import Project
from tests.conftest import numbers_now

from .conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("FINEGRAIN_SHOTS", "/tmp/shots")


def test_the_paper_tables_show_with_captions_and_grouped_headers(page, live_server):
    call_command("load_demo", "--password", "pw-demo-123", verbosity=0)
    call_command("simulate_annotations", "--project", "demo", verbosity=0)
    numbers_now(Project.objects.get(slug="demo"), "analytics")
    log_in(page, live_server, "manager", "pw-demo-123")

    page.goto(f"{live_server.url}/projects/demo/analytics/#paper-tables")
    section = page.locator("section#paper-tables")
    tables = section.locator("div.paper-table")
    tables.first.wait_for(timeout=120_000)  # the page polls the figures' job and reloads when it is done
    # Table 2, figure 3, table 4, table 5 (the demo has redacted booking texts), table 13, tables 14-17, the
    # hallucinated source texts, the error types per summarizer: in the paper's order.
    assert tables.count() == 11
    captions = section.locator("p.paper-caption").all_inner_texts()
    assert [caption.split(":")[0] for caption in captions[:9]] == [
        "Table 2", "Figure 3", "Table 4", "Table 5", "Table 13", "Table 14", "Table 15", "Table 16", "Table 17"]
    assert "at least one summarizer hallucinates" in captions[9] and "error types" in captions[10].lower()
    # Table 2: agreement with two decimals; figure 3 drawn beside its table of ranks.
    agreement = section.locator("#paper-agreement-by-domain tbody td").all_inner_texts()
    assert agreement and all(cell == "—" or len(cell.split(".")[1]) == 2 for cell in agreement)
    assert section.locator("#paper-summarizer-ranks svg.rank-chart").count() == 1
    # Table 4's header groups: the input types over their lengths over the three dimensions.
    table_4 = section.locator("#paper-context-scores")
    head = table_4.locator("thead tr")
    assert head.count() == 3
    assert head.nth(2).locator("th").all_inner_texts()[1:4] == ["Faith", "Comp", "Conc"]
    # The demo's three summarizers and the context-wise average.
    assert table_4.locator("tbody tr").count() == 4
    assert table_4.locator("tbody tr").last.locator("th").inner_text() == "Avg. score (context-wise)"
    # Every number as the paper prints it: one decimal, or a dash where a cell has no score.
    cells = table_4.locator("tbody td").all_inner_texts()
    assert cells and all(cell == "—" or (cell.count(".") == 1 and len(cell.split(".")[1]) == 1) for cell in cells)
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")

    os.makedirs(SHOTS, exist_ok=True)
    section.screenshot(path=os.path.join(SHOTS, "analytics-paper-tables.png"))
    page.screenshot(path=os.path.join(SHOTS, "analytics-page.png"), full_page=True)
