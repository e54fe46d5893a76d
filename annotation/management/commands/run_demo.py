"""`make demo`'s server: the web server and, beside it, the Celery worker that runs the long work (imports, HIT
building, AI runs, exports, publishing), as in production. Without CELERY_BROKER_URL they meet on the embedded
broker (a folder under FINEGRAIN_DATA_DIR), so nothing else has to run."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

# Django's autoreloader runs the server in a child process with this variable set; that child starts no worker.
RELOADER_CHILD = "RUN_MAIN"
# How long the worker may take to finish the task in hand once asked to stop. A process manager or a closed terminal
# waits only a few seconds before it kills everything, and a demo's unfinished job can simply be started again.
GRACE_SECONDS = 5.0


def demo_worker_command(data_dir: Path) -> list[str]:
    """One worker for every queue, with beat inside it (expired reservations, the crowd outbox's re-queue)."""
    return [sys.executable, "-m", "celery", "-A", "config", "worker", "--queues", "default,assist,crowd",
            "--concurrency", "2", "--beat", "--schedule", str(data_dir / "celerybeat-schedule"),
            "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--hostname", "demo@%h"]


def served_url(addrport: str) -> str:
    """The address runserver listens on, as a link: a bare port is on 127.0.0.1, as runserver reads it."""
    return f"http://{addrport if ':' in addrport else f'127.0.0.1:{addrport}'}/"


def _stop_requested(signum, frame):
    # The same way out as Ctrl-C: runserver and Django's autoreloader already stop their server on it.
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = ("Run the web server and a Celery worker beside it (on the embedded broker when CELERY_BROKER_URL is "
            f"empty). Ctrl-C, SIGTERM or a closed terminal stops both; the worker has {GRACE_SECONDS:g} s to finish "
            "the task in hand (Ctrl-C again stops it at once).")

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000", help="as runserver's")
        parser.add_argument("--noreload", action="store_true", help="as runserver's")

    def handle(self, *args, addrport: str, noreload: bool, **options):
        if os.environ.get(RELOADER_CHILD) == "true":
            call_command("runserver", addrport, use_reloader=True)
            return
        # Set before the worker starts, so that it does not inherit an ignored SIGINT from a script that started us
        # in the background: Ctrl-C must reach us whatever our parent did with it.
        signal.signal(signal.SIGINT, _stop_requested)
        signal.signal(signal.SIGTERM, _stop_requested)
        signal.signal(signal.SIGHUP, _stop_requested)
        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
        # A process group of its own (pool processes and beat included), so that stopping it can end all of them
        # and the terminal's Ctrl-C reaches only us: we decide how the worker stops.
        worker = subprocess.Popen(demo_worker_command(settings.DATA_DIR), cwd=settings.BASE_DIR, process_group=0)
        try:
            broker = "the embedded broker" if settings.FINEGRAIN_EMBEDDED_BROKER else "the broker"
            self.stdout.write(f"Started a Celery worker (pid {worker.pid}) on {broker}.")
            self.stdout.write(self.style.SUCCESS(f"Open {served_url(addrport)} and log in with a demo account."))
            self.stdout.flush()
            call_command("runserver", addrport, use_reloader=not noreload)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop(worker)

    def stop(self, worker: subprocess.Popen) -> None:
        if worker.poll() is not None:
            return
        self.stdout.write(f"Stopping the worker: it has {GRACE_SECONDS:g} s to finish the task in hand "
                          "(Ctrl-C again stops it at once).")
        self.stdout.flush()
        worker.send_signal(signal.SIGTERM)  # Celery's warm shutdown
        try:
            worker.wait(timeout=GRACE_SECONDS)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            pass
        # Beat and the pool processes can outlive a main process that stopped, so the whole group goes.
        try:
            os.killpg(worker.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        worker.wait()
