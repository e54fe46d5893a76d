"""A real chat-completions server on loopback, scripted per test, and a guard that keeps boto3 off the network."""

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; str -> sent as is.
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def chat_reply(content: str, *, model: str = "served-model", prompt_tokens: int = 100, completion_tokens: int = 20):
    return Reply(
        body={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        }
    )


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    json: dict[str, Any]


class ChatServer:
    """Answers POSTs from a queue of Replies, or from a function of the request when one is set."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.responder: Callable[[RecordedRequest], Reply] | None = None
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                payload = json.loads(self.rfile.read(length) or b"{}")
                request = RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, payload)
                with server._lock:
                    server.requests.append(request)
                    if server.responder is not None:
                        reply = server.responder(request)
                    elif server.replies:
                        reply = server.replies.popleft()
                    else:
                        reply = Reply(status=500, body={"error": {"message": "test script exhausted"}})
                time.sleep(reply.delay)
                body = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body.encode())))
                    self.end_headers()
                    self.wfile.write(body.encode())
                except (BrokenPipeError, ConnectionResetError):  # The client gave up (timeout tests).
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat_server():
    server = ChatServer()
    yield server
    server.close()


@pytest.fixture
def sleeps() -> list[float]:
    """Pass `sleeps.append` as the sleep function: retries are recorded instead of waited for."""
    return []


@pytest.fixture(autouse=True)
def no_aws_lookups(monkeypatch):
    """Fake static credentials, so botocore never looks further (profiles, the instance metadata endpoint)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")


@pytest.fixture
def encode_calls(monkeypatch):
    """The sentences sent to the real embedding model, call by call."""
    from assist import embeddings

    calls: list[list[str]] = []
    real = embeddings.encode

    def counting(sentences, *args, **kwargs):
        calls.append(list(sentences))
        return real(sentences, *args, **kwargs)

    monkeypatch.setattr(embeddings, "encode", counting)
    return calls
