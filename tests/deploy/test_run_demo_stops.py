"""`run_demo` stops with its worker however it is asked to: SIGTERM from a process manager, or Ctrl-C when the
script that started it ignores Ctrl-C (as a shell does for a job it puts in the background). Each test starts the
real command in a child process on a free port, as `make demo` does."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .conftest import ROOT, clean_env
from .test_embedded_broker import free_port

pytestmark = pytest.mark.slow

# The worker's grace (run_demo's GRACE_SECONDS) and time for the processes to go: on a busy machine a Python process
# with Django loaded takes seconds just to exit. Without the fix they are still there minutes later.
FEW_SECONDS = 15


@pytest.fixture
def data_dir(tmp_path) -> Path:
    """An empty data directory: starting and stopping needs no database (its pages would answer with an error)."""
    data = tmp_path / "data"
    data.mkdir()
    return data


def running(pgid: int) -> list[int]:
    """The processes of a group that still run (a zombie has stopped; who reaps it is not run_demo's affair)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # the process ended while we looked
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry.name))
    return alive


def answers(url: str) -> bool:
    """The server is up when it answers at all."""
    try:
        httpx.get(url, timeout=2)
    except httpx.TransportError:
        return False
    return True


def start_demo(data: Path, log: Path, *, ignore_sigint: bool = False,
               options: tuple[str, ...] = ()) -> tuple[subprocess.Popen, int, int]:
    """run_demo serving on a free port (with the autoreloader, as `make demo` runs it, unless `options` say
    --noreload); its worker's pid."""
    port = free_port()
    preexec = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None
    demo = subprocess.Popen([sys.executable, "manage.py", "run_demo", *options, f"127.0.0.1:{port}"], cwd=ROOT,
                            env=clean_env(FINEGRAIN_DATA_DIR=str(data)), stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=preexec)
    # Up when the server answers and the worker is ready: stopping a worker that is still starting up proves less.
    deadline = time.monotonic() + 240  # on a busy machine a cold start takes a minute or more
    while not (answers(f"http://127.0.0.1:{port}/health/") and "ready." in log.read_text()):
        assert demo.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)
    worker_pid = int(log.read_text().split("Started a Celery worker (pid ", 1)[1].split(")", 1)[0])
    return demo, port, worker_pid


def stopped_within(demo: subprocess.Popen, worker_pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if demo.poll() is not None and not running(worker_pid) and not running(demo.pid):
            return True
        time.sleep(0.1)
    return False


def clean_up(demo: subprocess.Popen, worker_pid: int) -> None:
    for pgid in (demo.pid, worker_pid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    demo.wait()


@pytest.mark.parametrize("options", [(), ("--noreload",)], ids=["reloader", "noreload"])
def test_it_stops_with_its_worker_on_sigterm(data_dir, tmp_path, options):
    log = tmp_path / "run_demo.log"
    demo, port, worker_pid = start_demo(data_dir, log, options=options)
    try:
        os.kill(demo.pid, signal.SIGTERM)  # a process manager signals the process it started, not its children
        assert stopped_within(demo, worker_pid, FEW_SECONDS), log.read_text()[-3000:]
    finally:
        clean_up(demo, worker_pid)
    assert f"Open http://127.0.0.1:{port}/" in log.read_text()


def test_it_stops_on_ctrl_c_when_started_with_ctrl_c_ignored(data_dir, tmp_path):
    log = tmp_path / "run_demo.log"
    demo, _, worker_pid = start_demo(data_dir, log, ignore_sigint=True)
    try:
        os.killpg(demo.pid, signal.SIGINT)  # Ctrl-C in the terminal: to the foreground process group
        assert stopped_within(demo, worker_pid, FEW_SECONDS), log.read_text()[-3000:]
    finally:
        clean_up(demo, worker_pid)
