"""A real HTTP server on 127.0.0.1 that answers like Prolific's API from recorded fixtures and records every
request (method, path, headers, JSON body), so the real httpx client code runs without the network.

Requests to the endpoints below are checked against the fields docs.prolific.com marks required, and refused with
a 400 as Prolific would; so a request of the wrong shape fails the test instead of meeting a canned answer.
"""

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "prolific"
# Submission transitions, as the prolific-oss CLI lists them (prolific-oss/cli, cmd/submission/transition.go).
TRANSITIONS = {"APPROVE", "COMPLETE", "REJECT", "RETURN", "SCREEN_OUT", "START", "UNREJECT", "UNRETURN"}


def _group(body):
    # "Create a new participant group within a workspace": name required; a workspace or organisation id too.
    if not body.get("name") or not (body.get("workspace_id") or body.get("organisation_id")):
        return "name and workspace_id (or organisation_id) are required"


def _members(body):
    # "Add / Remove participants to / from a participant group": {"participant_ids": [...]}.
    if not isinstance(body.get("participant_ids"), list):
        return "participant_ids must be a list"


def _message(body):
    # "Send a message": recipient_id, body and study_id are all required.
    if not all(body.get(name) for name in ("recipient_id", "body", "study_id")):
        return "recipient_id, body and study_id are required"


def _bulk_message(body):
    # "Send a message to multiple participants": ids, body and study_id are all required.
    if not (isinstance(body.get("ids"), list) and body["ids"] and body.get("body") and body.get("study_id")):
        return "ids, body and study_id are required"


def _transition(body):
    if body.get("action") not in TRANSITIONS:
        return f"unknown action {body.get('action')!r}"
    if body["action"] == "REJECT" and (len(body.get("message") or "") < 100 or not body.get("rejection_category")):
        return "a rejection needs a message of 100 characters or more and a rejection_category"


def _study_filters(body):
    for entry in body.get("filters") or []:
        if not entry.get("filter_id") or not (entry.get("selected_values") or entry.get("selected_range")):
            return "each filter needs filter_id and selected_values or selected_range"


def _study_update(body):
    # A published study's places are raised with PATCH /api/v1/studies/{id}/ {"total_available_places": n}, as the
    # prolific-oss CLI's `study increase-places` does (cmd/study/increase_places.go): a new total, never lower.
    if set(body) != {"total_available_places"}:
        return f"only total_available_places is changed on a published study, got {sorted(body)}"
    places = body["total_available_places"]
    if not isinstance(places, int) or isinstance(places, bool) or places < 1:
        return "total_available_places must be a positive integer (the new total, not an increment)"


CHECKS = [
    ("POST", re.compile(r"^/api/v1/participant-groups/$"), _group),
    ("POST", re.compile(r"^/api/v1/participant-groups/[^/]+/participants/$"), _members),
    ("DELETE", re.compile(r"^/api/v1/participant-groups/[^/]+/participants/$"), _members),
    ("POST", re.compile(r"^/api/v1/messages/$"), _message),
    ("POST", re.compile(r"^/api/v1/messages/bulk/$"), _bulk_message),
    ("POST", re.compile(r"^/api/v1/submissions/[^/]+/transition/$"), _transition),
    ("POST", re.compile(r"^/api/v1/studies/$"), _study_filters),
    ("PATCH", re.compile(r"^/api/v1/studies/[^/]+/$"), _study_update),
]


def refusal(method: str, path: str, body) -> str | None:
    for check_method, pattern, check in CHECKS:
        if method == check_method and pattern.match(path):
            return check(body if isinstance(body, dict) else {})
    return None


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict
    body: object


@dataclass
class ProlificServer:
    routes: dict = field(default_factory=dict)  # (method, path) -> (status, fixture name or None)
    requests: list = field(default_factory=list)
    url: str = ""
    # Whether a study answers GET with the total of places its last accepted PATCH set, as Prolific does.
    tracks_places: bool = False
    places: dict = field(default_factory=dict)  # study path -> total_available_places set by PATCH

    def route(self, method: str, path: str, fixture: str | None, status: int = 200) -> None:
        self.routes[(method, path)] = (status, fixture)

    def lowers_places(self, path: str, body) -> str | None:
        """Places are increased, never decreased: compared with what GET on the study answers now."""
        _, fixture = self.routes.get(("GET", path), (404, None))
        if fixture and isinstance(body, dict):
            current = self.places.get(path, json.loads((FIXTURES / fixture).read_text()).get("total_available_places"))
            if isinstance(current, int) and body.get("total_available_places", current) < current:
                return f"the study has {current} places; they cannot be decreased"
        return None

    def calls(self, method: str | None = None, path: str | None = None) -> list[Recorded]:
        return [r for r in self.requests if (method is None or r.method == method) and (path is None or r.path == path)]


def start(server_state: ProlificServer):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            server_state.requests.append(Recorded(self.command, self.path, dict(self.headers),
                                                  json.loads(raw) if raw else None))
            status, fixture = server_state.routes.get((self.command, self.path), (404, None))
            body = (FIXTURES / fixture).read_bytes() if fixture else (
                b'{"error": {"detail": "Not found."}}' if status == 404 else b"")
            problem = refusal(self.command, self.path, server_state.requests[-1].body)
            if problem is None and self.command == "PATCH":
                problem = server_state.lowers_places(self.path, server_state.requests[-1].body)
            if problem is not None:
                status, body = 400, json.dumps({"error": {"detail": problem}}).encode()
            elif server_state.tracks_places and self.command == "PATCH" and status < 400:
                server_state.places[self.path] = server_state.requests[-1].body["total_available_places"]
            if server_state.tracks_places and self.command == "GET" and self.path in server_state.places:
                body = json.dumps({**json.loads(body), "total_available_places": server_state.places[self.path]}
                                  ).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = do_PATCH = _answer

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server_state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    # shutdown() waits for the loop's next poll: 0.5 s by default, at every test's end.
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    return httpd
