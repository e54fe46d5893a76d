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


def demo_worker_command(data_dir: Path) -> list[str]:
    """One worker for every queue, with beat inside it (expired reservations, the crowd outbox's re-queue)."""
    return [sys.executable, "-m", "celery", "-A", "config", "worker", "--queues", "default,assist,crowd",
            "--concurrency", "2", "--beat", "--schedule", str(data_dir / "celerybeat-schedule"),
            "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--hostname", "demo@%h"]


class Command(BaseCommand):
    help = ("Run the web server and a Celery worker beside it (on the embedded broker when CELERY_BROKER_URL is "
            "empty). Ctrl-C stops both; the worker first finishes the task in hand (Ctrl-C again stops it at once).")

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000", help="as runserver's")
        parser.add_argument("--noreload", action="store_true", help="as runserver's")

    def handle(self, *args, addrport: str, noreload: bool, **options):
        if os.environ.get(RELOADER_CHILD) == "true":
            call_command("runserver", addrport, use_reloader=True)
            return
        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
        worker = subprocess.Popen(demo_worker_command(settings.DATA_DIR), cwd=settings.BASE_DIR)
        broker = "the embedded broker" if settings.FINEGRAIN_EMBEDDED_BROKER else "the broker"
        self.stdout.write(f"Started a Celery worker (pid {worker.pid}) on {broker}.")
        self.stdout.flush()
        try:
            call_command("runserver", addrport, use_reloader=not noreload)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop(worker)

    def stop(self, worker: subprocess.Popen) -> None:
        if worker.poll() is not None:
            return
        self.stdout.write("Stopping the worker: it finishes the task in hand (Ctrl-C again stops it at once).")
        worker.send_signal(signal.SIGTERM)  # Celery's warm shutdown
        try:
            worker.wait()
        except KeyboardInterrupt:
            # Celery's cold shutdown: an unfinished task goes back to the broker (acks_late), for the next start.
            worker.send_signal(signal.SIGQUIT)
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
