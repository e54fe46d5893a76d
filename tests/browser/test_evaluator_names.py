"""An evaluator imported from the analytics page under a name with spaces and brackets, in a real browser: the page
shows it as written, and its CSV link downloads its rows."""

import os

import pytest
from django.core.management import call_command

from corpus.models import Summary

from .conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("FINEGRAIN_SHOTS", "/tmp/shots")
NAME = "G-Eval (GPT-4)"


def test_an_evaluator_named_as_the_release_names_it_is_imported_and_downloaded(page, live_server, tmp_path):
    call_command("load_demo", "--password", "pw-demo-123", verbosity=0)
    call_command("simulate_annotations", "--project", "demo", verbosity=0)
    scores = tmp_path / "scores.csv"
    summaries = Summary.objects.filter(document__project__slug="demo").values_list("document__uid", "model")
    scores.write_text("uid,model,faithfulness\n" + "".join(f"{uid},{model},{index % 5 + 1}\n"
                                                           for index, (uid, model) in enumerate(summaries)))
    log_in(page, live_server, "manager", "pw-demo-123")

    page.goto(f"{live_server.url}/projects/demo/analytics/#evaluator-runs")
    page.get_by_role("button", name="Compute the analytics figures").click()  # never computed: the manager asks
    form = page.locator("form[action$='/analytics/evaluators/']")
    form.locator("input[name=evaluator]").wait_for(timeout=120_000)  # the figures' job first
    form.locator("input[name=evaluator]").fill(f"  {NAME} ")
    form.locator("input[type=file]").set_input_files(str(scores))
    form.locator("button[type=submit]").click()
    page.wait_for_load_state()
    assert f"Imported the scores of {NAME} for {summaries.count()} summaries." in page.locator(
        "ul.messages").inner_text()

    # New scores make the figures older than the data: the manager has them computed again.
    page.get_by_role("button", name="Update the analytics figures").click()
    heading = page.locator("section#evaluators h3", has_text=NAME)
    heading.wait_for(timeout=120_000)
    assert heading.inner_text().startswith(NAME)
    with page.expect_download() as download:
        heading.locator("a", has_text="CSV").click()
    path = download.value.path()
    text = open(path, encoding="utf-8").read()
    assert download.value.suggested_filename == f"demo-evaluator-{NAME}.csv"
    assert text.splitlines()[1].startswith(f'"{NAME}","faithfulness"')

    os.makedirs(SHOTS, exist_ok=True)
    page.locator("section#evaluators").screenshot(path=os.path.join(SHOTS, "analytics-evaluator-named.png"))
