"""A worker whose Redis restarts while one of its two pool slots is free: it reconnects and finishes its task.

With a free slot the worker keeps a blocking read (BRPOP) open on the task channel. kombu 5.7 lets the connection
error of that read escape a channel's close, the transport is torn down under the still-open channel, and closing it
again raises AttributeError, which Celery takes as unrecoverable: the worker exited (config/celery_app.py patches
the close). The broker is a private redis-server this test kills and starts again.
"""

import subprocess
import sys
import time

import pytest

from config.celery_app import app

from .conftest import ROOT, app_env, stop_group, wait_until

pytestmark = pytest.mark.services

WORKER = """
import pathlib, sys, time
from config.celery_app import app

@app.task(name="tests.hold_then_finish", acks_late=True)
def hold_then_finish(path):
    time.sleep(4)
    pathlib.Path(path).write_text("finished")

app.worker_main(sys.argv[1:])
"""


def test_a_worker_with_a_free_slot_survives_its_broker_restarting(private_redis, tmp_path):
    log = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, "worker", "-Q", "crowd", "--concurrency", "2", "--pool", "prefork",
         "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--hostname", "broker-restart@%h"],
        cwd=ROOT, env=app_env(CELERY_BROKER_URL=private_redis.url), stdout=log.open("w"), stderr=subprocess.STDOUT,
        start_new_session=True)
    text = lambda: log.read_text(errors="replace")  # noqa: E731
    done = tmp_path / "done"
    try:
        wait_until(lambda: " ready." in text(), timeout=90, what="the worker", alive=worker)
        # The project's app, on a connection to the private broker (CELERY_BROKER_URL names the shared one).
        eager, app.conf.task_always_eager = app.conf.task_always_eager, False
        try:
            with app.connection_for_write(private_redis.url) as connection:
                app.send_task("tests.hold_then_finish", args=[str(done)], queue="crowd", connection=connection)
        finally:
            app.conf.task_always_eager = eager
        wait_until(lambda: "tests.hold_then_finish[" in text(), timeout=30, what="the task", alive=worker)
        # Received, then started by a pool process: one slot runs it, the other waits on the broker.
        time.sleep(0.5)
        private_redis.restart()
        wait_until(lambda: "Connection to broker lost" in text(), timeout=30, what="the worker to see the loss",
                   alive=worker)
        wait_until(done.exists, timeout=60, what="the task to finish across the restart", alive=worker)
        wait_until(lambda: "Connected to redis://" in text().split("Connection to broker lost")[-1], timeout=60,
                   what="the worker to reconnect", alive=worker)
        assert worker.poll() is None, text()[-4000:]
        assert "Unrecoverable error" not in text(), text()[-4000:]
    finally:
        stop_group(worker, grace=15)
