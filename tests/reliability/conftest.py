"""Reliability suite: real processes on loopback, faults injected into private service instances.

Every test here is marked `services` and runs under `bash .ci/run`. The processes a test starts (gunicorn, Celery
workers, a throwaway PostgreSQL cluster, a private redis-server) are started by fixtures below and stopped by them,
whatever happens; every wait is bounded. The shared PostgreSQL and Redis on 5432/6379 are never stopped.

Each test records its figures with `record_figures(...)` (tests/reliability/figures.py).
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PG_BIN = Path(os.environ.get("FINEGRAIN_PG_BIN", "/usr/lib/postgresql/15/bin"))


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """The same hasher as tests/reliability/settings.py, which the gunicorn started here uses."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# --- Processes ----------------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate, *, timeout: float, what: str, interval: float = 0.2, alive=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if alive is not None and alive.poll() is not None:
            raise AssertionError(f"{what}: the process exited with {alive.returncode}")
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout} s")


def stop_group(process: subprocess.Popen, grace: float = 15) -> None:
    """TERM the process group we started (start_new_session=True), then KILL it."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)


def children_of(pid: int) -> list[int]:
    """Direct children of `pid`, from /proc (gunicorn's workers, a Celery worker's pool processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            found.append(int(entry.name))
    return sorted(found)


def app_env(**extra) -> dict:
    from django.conf import settings

    from tests.worker import database_url

    env = dict(os.environ, DATABASE_URL=database_url(), CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
               DEBUG="false", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    env.pop("FINEGRAIN_REQUIRE_SERVICES", None)
    env.update({key: str(value) for key, value in extra.items()})
    return env


class Gunicorn:
    def __init__(self, process: subprocess.Popen, url: str, log: Path):
        self.process, self.url, self.log = process, url, log

    def workers(self) -> list[int]:
        return children_of(self.process.pid)


@contextmanager
def running_gunicorn(log: Path, **extra):
    """A real gunicorn (3 sync workers, deploy/gunicorn.conf.py) on a free loopback port, on the test database;
    `extra` adds to its environment."""
    port = free_port()
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--config", "deploy/gunicorn.conf.py", "config.wsgi:application"],
            cwd=ROOT, env=app_env(GUNICORN_BIND=f"127.0.0.1:{port}", GUNICORN_WORKERS=3, GUNICORN_TIMEOUT=60,
                                  ALLOWED_HOSTS="127.0.0.1", LOG_LEVEL="WARNING", DB_CONN_MAX_AGE=60,
                                  DJANGO_SETTINGS_MODULE="tests.reliability.settings", **extra),
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = Gunicorn(process, f"http://127.0.0.1:{port}", log)
    try:
        import httpx

        def up():
            try:
                return httpx.get(server.url + "/accounts/login/", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        try:
            wait_until(up, timeout=60, what="gunicorn", alive=process)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{log.read_text()[-3000:]}") from None
        wait_until(lambda: len(server.workers()) == 3, timeout=30, what="gunicorn's 3 workers")
        yield server
    finally:
        stop_group(process)
        if os.environ.get("FINEGRAIN_RELIABILITY_KEEP_LOGS"):
            shutil.copy(log, ROOT / "benchmarks" / "out" / "gunicorn.log")


@pytest.fixture
def gunicorn(transactional_db, tmp_path):
    with running_gunicorn(tmp_path / "gunicorn.log") as server:
        yield server


class PrivateRedis:
    def __init__(self, tmp: Path):
        self.port = free_port()
        self.tmp = tmp
        self.process = None
        self.restarts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.tmp)],
            stdout=(self.tmp / "redis.log").open("a"), stderr=subprocess.STDOUT, start_new_session=True)
        import redis

        def up():
            try:
                return redis.Redis(port=self.port, socket_connect_timeout=1).ping()
            except redis.RedisError:
                return False

        wait_until(up, timeout=20, what="private redis-server", alive=self.process)

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def restart(self) -> None:
        self.kill()
        self.start()
        self.restarts += 1


@pytest.fixture
def private_redis(tmp_path):
    """A throwaway redis-server on a free port (no persistence: a restart loses what it held)."""
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        if server.process is not None and server.process.poll() is None:
            stop_group(server.process, grace=5)


class PrivatePostgres:
    """A throwaway PostgreSQL 15 cluster owned by `postgres` (initdb refuses root), trust auth, loopback only."""

    def __init__(self, tmp: Path):
        self.port = free_port()
        self.dir = tmp
        self.data = tmp / "data"
        self.restarts = 0

    def _run(self, *args, timeout=60):
        command = [str(PG_BIN / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, check=True, capture_output=True, text=True, timeout=timeout)

    def init(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "pg.log"), "-w", "-t", "30", "-o",
                  f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "30", "stop")

    def restart(self) -> None:
        self.stop("immediate")  # as a crash: no checkpoint, backends killed
        self.start()
        self.restarts += 1

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/finegrain"


@pytest.fixture
def private_postgres():
    tmp = Path(tempfile.mkdtemp(prefix="fg-pg-"))
    server = PrivatePostgres(tmp)
    server.init()
    server.start()
    try:
        yield server
    finally:
        try:
            server.stop("immediate")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(tmp, ignore_errors=True)
