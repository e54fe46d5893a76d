"""The MTurk external-HIT flow in Debian's Chromium: a loopback page plays MTurk's worker site and frames the HIT's
ExternalQuestion URL with assignmentId, hitId, workerId and turkSubmitTo, as MTurk does.

Preview (assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE): the worker sees the task and cannot answer. Accepted: the worker
answers the FV HIT inside the frame with the keyboard and submits; the page then posts the assignmentId to
{turkSubmitTo}/mturk/externalSubmit, which the loopback site records. The frame is cross-site and the browser gives
it no cookies: the signed session token in the page carries the session and stands in for the CSRF cookie.
Production's frame-ancestors names only MTurk's origins; the loopback site is allowed through
FINEGRAIN_MTURK_EXTRA_FRAME_ANCESTORS, and without it the browser refuses to show the HIT at all.
"""

import json
import threading
import time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, CrowdBatch, CrowdClaim, CrowdHit, Label
from annotation.services.hits import build_hits
from assist.models import ContextualMapping, PreLabel
from corpus.importing import import_dataset
from corpus.models import Project

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HIT_ID = "3HIT" + "0" * 26
ASSIGNMENT_ID = "3ASG" + "0" * 25 + "7"
WORKER_ID = "A1WORKERINFRAME"
ROW = {
    "uid": "lib-1", "doc_id": "lib-1", "source": "TestNews", "domain": "news", "input_type": "non-dialogue",
    "redact_type": "none", "model": "model-a",
    "document": ("The Riverside community library reopened on Monday after an eight-month renovation. "
                 "The work cost 1.4 million dollars, most of it paid by a state grant. "
                 "Opening hours are extended to 9 p.m. on weekdays. "
                 "The library expects 500 visitors a day, twice as many as before."),
    "summary": ("The Riverside library reopened after a renovation. "
                "It now closes at 10 p.m. on weekdays. "
                "It expects 500 visitors a day."),
}


class MTurkWorkerSite:
    """A loopback stand-in for MTurk's worker site: pages that frame a URL, and /mturk/externalSubmit."""

    def __init__(self):
        self.frames: dict[str, str] = {}  # path -> URL to frame
        self.submissions: list[dict] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, html: str):
                body = html.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                url = site.frames.get(self.path)
                if url is None:
                    return self._send(404, "<p>Not found</p>")
                self._send(200, f'<!doctype html><title>Worker site</title><h1>HIT</h1>'
                                f'<iframe id="hit-frame" title="HIT" src="{url}" width="1200" height="800"></iframe>')

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                site.submissions.append({"path": self.path, "form": form,
                                         "content_type": self.headers.get("Content-Type", "")})
                self._send(200, "<p id='mturk-thanks'>Your HIT was submitted.</p>")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def framing(self, path: str, url: str) -> str:
        self.frames[path] = url
        return self.origin + path

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def worker_site():
    site = MTurkWorkerSite()
    yield site
    site.close()


@pytest.fixture
def batch(db):
    project = Project.objects.create(slug="lib", name="Library study", annotators_per_unit=1, attention_check_rate=0)
    import_dataset(project=project, data=json.dumps(ROW).encode(), filename="lib.jsonl")
    for sentence in project.documents.get().summaries.get().sentences.all():
        ContextualMapping.objects.create(summary_sentence=sentence, ranked=[sentence.index], scores=[0.9],
                                         highlighted=[sentence.index], fraction=0.3, model_name="test",
                                         model_version="1")
        PreLabel.objects.create(summary_sentence=sentence, category="no_error", reason="Stated in the text.",
                                status="ok", backend="offline-similarity", model="all-MiniLM-L6-v2", prompt_version="t")
    build_hits(project, "fv")
    batch = CrowdBatch.objects.create(project=project, task="fv", provider="mturk", sandbox=True, status="published",
                                      reward_usd=Decimal("0.40"), assignments_per_hit=1)
    CrowdHit.objects.create(batch=batch, hit=project.hits.get(task="fv"), request_token="t0", external_id=HIT_ID,
                            published_at=timezone.now())
    return batch


def external_url(live_server, batch, **params) -> str:
    """The ExternalQuestion's URL with the parameters MTurk appends to it."""
    return f"{live_server.url}{reverse('crowd_mturk_entry', args=[batch.public_id])}?{urlencode(params)}"


def hit_frame(page):
    page.wait_for_selector("#hit-frame")
    return page.frame_locator("#hit-frame"), next(frame for frame in page.frames if frame != page.main_frame)


def test_a_worker_previews_accepts_answers_and_submits_inside_mturks_frame(chromium, live_server, batch, worker_site,
                                                                           settings):
    settings.FINEGRAIN_MTURK_SUBMIT_ORIGINS = [worker_site.origin]  # turkSubmitTo: the loopback worker site
    context = chromium.new_context(viewport={"width": 1280, "height": 1000})
    # A cookie the HIT's own site would send if the browser let a third-party frame have cookies.
    context.add_cookies([{"name": "probe", "value": "1", "domain": "localhost", "path": "/", "sameSite": "None",
                          "secure": True}])
    page = context.new_page()
    try:
        errors, console = [], []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: console.append(message.text))
        # The cookie goes with a first-party request, and the request's headers show it (so the check at the end,
        # that no framed request carried one, can see a cookie when there is one).
        with page.expect_request(f"{live_server.url}/health/") as first_party:
            page.goto(f"{live_server.url}/health/")
        assert "probe=1" in first_party.value.all_headers().get("cookie", "")
        sent_to_hit_site = []
        context.on("request", lambda request: request.url.startswith(live_server.url)
                   and sent_to_hit_site.append(request))

        # --- Production framing (only MTurk's origins): the browser refuses to show the HIT in another site.
        settings.FINEGRAIN_MTURK_EXTRA_FRAME_ANCESTORS = []
        preview = worker_site.framing("/preview", external_url(
            live_server, batch, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId=HIT_ID))
        with page.expect_response(lambda response: "/crowd/mturk/" in response.url) as refused:
            page.goto(preview)
        page.wait_for_load_state("load")  # the frame's load is part of the page's
        production_policy = "frame-ancestors https://www.mturk.com https://workersandbox.mturk.com;"
        assert refused.value.status == 200
        assert production_policy in refused.value.headers["content-security-policy"] + ";"
        _, frame = hit_frame(page)
        assert frame.locator("#preview").count() == 0, "frame-ancestors let a non-MTurk site frame the HIT"
        assert any("frame-ancestors" in text for text in console), console

        # --- The loopback site allowed as an extra frame ancestor: the preview shows, nothing to answer.
        settings.FINEGRAIN_MTURK_EXTRA_FRAME_ANCESTORS = [worker_site.origin]
        page.goto(preview)
        inner, frame = hit_frame(page)
        inner.locator("#preview").wait_for()
        assert "This is a preview" in inner.locator("#preview").inner_text()
        assert inner.locator("input, textarea, button[type=submit], #submit-hit").count() == 0
        assert not Assignment.objects.exists() and not CrowdClaim.objects.exists()
        # Third-party cookies are blocked in this browser: the framed site cannot see its own cookie.
        assert frame.evaluate("() => document.cookie") == ""

        # --- Accepted: MTurk reloads the frame with the worker's assignment.
        accepted = worker_site.framing("/accepted", external_url(
            live_server, batch, assignmentId=ASSIGNMENT_ID, hitId=HIT_ID, workerId=WORKER_ID,
            turkSubmitTo=worker_site.origin))
        page.goto(accepted)
        inner, frame = hit_frame(page)
        inner.locator("#item-0.current").wait_for()
        assert "ct=" in frame.url  # the session travels in the page, not in a cookie

        # The worker answers with the keyboard: r (the AI is right), n (no error), j (next item).
        page.locator("#hit-frame").focus()
        for position in range(3):
            if position:
                page.keyboard.press("j")
            page.keyboard.press("r")
            page.keyboard.press("n")
            inner.locator(f"#state-{position}").filter(has_text="Saved").wait_for(timeout=5000)
        page.keyboard.press("Enter")
        inner.locator("#confirm-submit[open]").wait_for()
        page.keyboard.press("Enter")
        inner.locator("#crowd-done").wait_for()
        assert "Thank you" in inner.locator("#crowd-done").inner_text()
        assignment = Assignment.objects.get(crowd_claim__external_assignment_id=ASSIGNMENT_ID)
        assert assignment.status == "submitted" and assignment.annotator.external_id == WORKER_ID
        assert [(label.ai_right, label.has_error) for label in
                Label.objects.filter(assignment=assignment).order_by("unit__position")] == [(True, False)] * 3

        # --- Back to MTurk: the page posts the assignmentId to {turkSubmitTo}/mturk/externalSubmit.
        inner.locator("#mturk-submit button").focus()
        page.keyboard.press("Enter")
        inner.locator("#mturk-thanks").wait_for()
        deadline = time.monotonic() + 5
        while not worker_site.submissions and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [(s["path"], s["form"].get("assignmentId")) for s in worker_site.submissions] == [
            ("/mturk/externalSubmit", [ASSIGNMENT_ID])]

        # No request to the HIT's site carried a cookie: the signed token did all the work.
        assert sent_to_hit_site and all("cookie" not in request.all_headers() for request in sent_to_hit_site)
        assert errors == []
    finally:
        context.close()
