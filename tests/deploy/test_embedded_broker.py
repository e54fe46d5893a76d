"""The laptop default, as `make demo` runs it (SQLite, no CELERY_BROKER_URL): a web request that starts long work
returns before any of it is done; a real Celery worker process on the embedded broker (a folder, no server) finishes
it; the job's fragment polls until then and stops. And `run_demo` starts and stops the web server and its worker
together. Everything runs in child processes on a throwaway data directory, as on a fresh checkout."""

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from annotation.management.commands.run_demo import demo_worker_command

from .conftest import ROOT, clean_env, run_manage

pytestmark = pytest.mark.slow

DOCUMENTS = 40
SETUP = """
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from corpus.models import Membership, Project
project = Project.objects.create(slug="demo", name="Demo")
user = get_user_model().objects.create_user("manager", password="pw-manager-1")
user.user_permissions.add(Permission.objects.get(content_type__app_label="corpus", codename="add_project"))
Membership.objects.create(project=project, user=user, role=Membership.Role.MANAGER)
"""


def dataset(documents: int) -> bytes:
    rows = []
    for n in range(documents):
        text = " ".join(f"Sentence {i} of document {n} says that the river rose by {i} metres." for i in range(12))
        rows.append({"uid": f"doc-{n}", "doc_id": f"d{n}", "source": "test", "domain": "news", "input_type": "non-dialogue",
                     "model": "m1", "document": text, "summary": f"Document {n} is about a river. It rose."})
    return "\n".join(json.dumps(row) for row in rows).encode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """A fresh site: migrated SQLite database, a project and its manager, nothing else."""
    data = tmp_path_factory.mktemp("embedded")
    for args in (("migrate", "--no-input"), ("shell", "-c", SETUP)):
        result = run_manage(*args, env={"FINEGRAIN_DATA_DIR": str(data)}, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
    return data


def start(command: list[str], data: Path, log: Path) -> subprocess.Popen:
    # Its own session, so that a test can send it Ctrl-C (SIGINT to the process group) as a terminal would.
    return subprocess.Popen(command, cwd=ROOT, env=clean_env(FINEGRAIN_DATA_DIR=str(data)), stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen, sig=signal.SIGTERM, timeout: float = 60) -> bool:
    """True if the process group stopped on `sig` alone."""
    if process.poll() is None:
        os.killpg(process.pid, sig)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return False
    return True


def wait_until_up(base: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()[-3000:]
        try:
            if httpx.get(f"{base}/health/", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise AssertionError("the web server did not come up: " + log.read_text()[-3000:])


def logged_in(base: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=30)
    client.get("/accounts/login/")
    response = client.post("/accounts/login/", data={"username": "manager", "password": "pw-manager-1",
                                                     "csrfmiddlewaretoken": client.cookies["csrftoken"]})
    assert response.status_code == 302, response.text[-2000:]
    return client


def upload(client: httpx.Client, data: bytes) -> tuple[str, float]:
    client.get("/projects/demo/import/")
    began = time.monotonic()
    response = client.post("/projects/demo/import/", data={"csrfmiddlewaretoken": client.cookies["csrftoken"]},
                           files={"file": ("river.jsonl", data, "application/x-ndjson")})
    took = time.monotonic() - began
    assert response.status_code == 302, response.text[-2000:]
    return response.headers["location"], took


def rows(data: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(data / "finegrain.sqlite3", timeout=20) as connection:
        return connection.execute(sql).fetchall()


def poll(client: httpx.Client, url: str) -> httpx.Response:
    return client.get(url, headers={"HX-Request": "true"})


def test_a_request_returns_at_once_and_a_worker_on_the_embedded_broker_finishes_the_job(data_dir, tmp_path):
    base = f"http://127.0.0.1:{free_port()}"
    web_log, worker_log = tmp_path / "web.log", tmp_path / "worker.log"
    web = start([sys.executable, "manage.py", "runserver", "--noreload", base.removeprefix("http://")], data_dir,
                web_log)
    worker = None
    try:
        wait_until_up(base, web, web_log)
        client = logged_in(base)
        assert client.get("/health/").json()["checks"]["broker"] == {"status": "ok", "mode": "embedded"}

        # No worker runs yet: the request can only have stored the file and queued the job.
        job_url, _ = upload(client, dataset(DOCUMENTS))
        assert rows(data_dir, "SELECT kind, status FROM corpus_job") == [("import", "queued")]
        assert rows(data_dir, "SELECT COUNT(*) FROM corpus_document") == [(0,)]
        assert list((data_dir / "broker" / "messages").iterdir()), "the task waits in the broker's folder"
        waiting = poll(client, job_url)
        assert waiting.status_code == 200 and "hx-get" in waiting.text and "Queued" in waiting.text

        worker = start(demo_worker_command(data_dir), data_dir, worker_log)
        seen, deadline = [], time.monotonic() + 180
        while time.monotonic() < deadline:
            assert worker.poll() is None, worker_log.read_text()[-3000:]
            response = poll(client, job_url)
            seen.append(response.status_code)
            if response.status_code == 286:
                break
            time.sleep(0.3)
        assert seen[-1] == 286, worker_log.read_text()[-3000:]  # finished: htmx stops polling
        assert set(seen[:-1]) <= {200} and seen.count(286) == 1
        assert "Done" in response.text and "hx-get" not in response.text
        assert f"{DOCUMENTS} / {DOCUMENTS} documents" in response.text
        assert rows(data_dir, "SELECT COUNT(*) FROM corpus_document") == [(DOCUMENTS,)]

        # With the worker running, the next job is picked up at once (the worker looks at the folder every 0.05 s).
        job_url, _ = upload(client, dataset(DOCUMENTS))
        job_id, queued_at = int(job_url.rstrip("/").rsplit("/", 1)[1]), time.monotonic()
        while rows(data_dir, f"SELECT started FROM corpus_job WHERE id = {job_id}") == [(None,)]:
            assert time.monotonic() - queued_at < 10, worker_log.read_text()[-3000:]
            time.sleep(0.02)
        print(f"from the request's answer to the worker's start: {time.monotonic() - queued_at:.2f} s")
    finally:
        if worker is not None:
            stop(worker, signal.SIGKILL)  # how it stops is run_demo's test
        stop(web)


def test_run_demo_serves_with_its_worker_and_ctrl_c_stops_both(data_dir, tmp_path):
    base = f"http://127.0.0.1:{free_port()}"
    log = tmp_path / "run_demo.log"
    demo = start([sys.executable, "manage.py", "run_demo", "--noreload", base.removeprefix("http://")], data_dir, log)
    try:
        wait_until_up(base, demo, log)
        client = logged_in(base)
        job_url, _ = upload(client, dataset(3))
        deadline = time.monotonic() + 180
        while poll(client, job_url).status_code != 286:
            assert time.monotonic() < deadline and demo.poll() is None, log.read_text()[-3000:]
            time.sleep(0.3)
        worker_pid = int(log.read_text().split("Started a Celery worker (pid ", 1)[1].split(")", 1)[0])
    finally:
        stopped = stop(demo, signal.SIGINT)  # Ctrl-C in the terminal
    assert stopped and demo.returncode == 0, log.read_text()[-3000:]
    with pytest.raises(ProcessLookupError):
        os.kill(worker_pid, 0)  # the worker stopped with the web server
