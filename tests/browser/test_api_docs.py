"""The API docs in Debian's Chromium: Swagger UI renders the operations under the site's CSP, with no violation."""

import pytest

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Runs before the page's own scripts (Playwright injects it outside the page's CSP) and records every violation.
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(event.violatedDirective + " " + (event.blockedURI || "inline"));
});
"""


def test_it_renders_the_operations_for_a_signed_in_user_without_a_csp_violation(page, live_server, annotator):
    console = []
    page.on("console", lambda message: console.append(message.text) if message.type == "error" else None)
    page.add_init_script(RECORD_VIOLATIONS)

    page.goto(f"{live_server.url}/api/docs/")
    assert page.url.startswith(f"{live_server.url}/accounts/login/")  # anonymous: to the log-in page first
    log_in(page, live_server, "ann", "pw-annotator-1")
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".opblock", timeout=20_000)

    assert "finegrain API" in page.locator(".info .title").inner_text()
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert len(paths) > 10 and any(path.startswith("/api/documents/") for path in paths)
    page.locator(".opblock-summary", has_text="/api/projects/").first.click()
    page.wait_for_selector(".opblock.is-open .opblock-body", timeout=10_000)
    assert page.evaluate("window.__cspViolations") == []
    assert [text for text in console if "Content Security Policy" in text] == []
    screenshot(page, "api-docs.png")
