"""A real Celery worker process for `services` tests: same code, the test database, the real Redis broker."""

import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    db = settings.DATABASES["default"]
    # pytest-django has renamed NAME to the test database by now.
    host = f"{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    return f"postgres://{host}/{connection.settings_dict['NAME']}"


@contextmanager
def celery_worker(queues: str = "default,assist,crowd", concurrency: int = 1, env: dict | None = None,
                  script: str = ""):
    """`env`: more variables for the worker, e.g. a crowd provider's endpoint on loopback. `script`: Python that
    starts the worker with `app.worker_main(sys.argv[1:])` after adding to the app (a task of the test's own),
    instead of `celery -A config`."""
    env = dict(os.environ, DATABASE_URL=database_url(), CELERY_BROKER_URL=settings.CELERY_BROKER_URL, **(env or {}))
    # The log goes to a file, not a pipe nobody reads: a full pipe would block the worker mid-task.
    log = tempfile.NamedTemporaryFile("w+", prefix="celery-worker-", suffix=".log")
    process = subprocess.Popen(
        [sys.executable, *(["-c", script] if script else ["-m", "celery", "-A", "config"]), "worker", "-Q", queues, "--concurrency", str(concurrency),
         "--pool", "prefork", "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--hostname",
         f"test-{os.getpid()}-{time.monotonic_ns()}@%h"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
    )
    process.log = log
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def worker_log(process) -> str:
    process.log.flush()
    process.log.seek(0)
    return process.log.read()[-5000:]


def purge_queues(*queues: str) -> None:
    import redis

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for queue in queues:
        client.delete(queue)
