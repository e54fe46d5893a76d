"""An assist run through the real Redis broker and a real Celery worker process, on PostgreSQL (CI)."""

import time
from pathlib import Path

import pytest

from annotation.importing import import_dataset
from annotation.models import Job, Project
from assist.models import ContextualMapping, DocumentEmbedding, PreLabel
from assist.runs import assist_run_start
from config.celery_app import app

from ..worker import celery_worker, purge_queues, worker_log

SMALL_JSONL = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "small.jsonl"


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_worker_process_runs_the_assist_job_and_the_row_shows_progress():
    purge_queues("default", "assist", "crowd")
    project = Project.objects.create(slug="worker", name="Worker")
    import_dataset(project=project, data=SMALL_JSONL.read_bytes(), filename="small.jsonl")
    app.conf.task_always_eager = False  # this test uses the real broker
    try:
        with celery_worker(queues="assist") as worker:
            job = assist_run_start(project=project)  # autocommit: the tasks are queued at once
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                job.refresh_from_db()
                if job.is_finished:
                    break
                assert worker.poll() is None, worker_log(worker)
                time.sleep(0.5)
    finally:
        app.conf.task_always_eager = True
    assert (job.status, job.progress, job.total) == (Job.Status.DONE, 2, 2), job.error
    assert DocumentEmbedding.objects.count() == 2
    assert ContextualMapping.objects.count() == 9
    assert PreLabel.objects.filter(status="ok").count() == 6
