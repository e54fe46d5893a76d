"""A real HTTP server on 127.0.0.1 that answers like Prolific's API from recorded fixtures and records every
request (method, path, headers, JSON body), so the real httpx client code runs without the network."""

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "prolific"


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

    def route(self, method: str, path: str, fixture: str | None, status: int = 200) -> None:
        self.routes[(method, path)] = (status, fixture)

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
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = do_PATCH = _answer

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server_state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return httpd
