"""The document page in a real browser: placeholders and markup inside texts are shown as text."""

import pytest
from django.core.management import call_command

from corpus.models import Document

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_shows_placeholders_and_markup_as_text(page, live_server):
    call_command("load_demo", "--password", "pw-demo-123", verbosity=0)
    alerts = []
    page.on("dialog", lambda dialog: (alerts.append(dialog.message), dialog.dismiss()))
    log_in(page, live_server, "manager", "pw-demo-123")

    booking = Document.objects.get(uid="demo-booking-001")
    page.goto(f"{live_server.url}{booking.get_absolute_url()}")
    source = page.locator("section.source").inner_text()
    assert "<PHONENUMBER_1>" in source and "<CODE_1>" in source
    assert page.locator("section.source phonenumber_1").count() == 0
    screenshot(page, "document-redacted.png")

    interview = Document.objects.get(uid="demo-interview-001")
    page.goto(f"{live_server.url}{interview.get_absolute_url()}")
    assert "<p>Welcome</p>" in page.locator("section.source").inner_text()
    assert page.locator("section.source p").count() == 0
    assert page.locator("main script").count() == 0
    assert alerts == []
    screenshot(page, "document-markup.png")
