"""An assist run through the real Redis broker and a real Celery worker process, on PostgreSQL (CI)."""

import time
from pathlib import Path

import pytest

from assist.models import ContextualMapping, DocumentEmbedding, PreLabel
from assist.runs import assist_start
from config.celery_app import app
from corpus.importing import import_dataset
from corpus.models import Job, Project

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
            job = assist_start(project=project)  # autocommit: the tasks are queued at once
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


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_worker_process_runs_an_evaluator_job_document_by_document():
    from assist.evaluators.runs import evaluator_run_start
    from assist.models import EvaluatorScore, EvaluatorSentenceScore

    purge_queues("default", "assist", "crowd")
    project = Project.objects.create(slug="worker-evaluator", name="Worker")
    import_dataset(project=project, data=SMALL_JSONL.read_bytes(), filename="small.jsonl")
    app.conf.task_always_eager = False  # this test uses the real broker
    try:
        with celery_worker(queues="assist") as worker:
            job = evaluator_run_start(project=project, evaluator="sbertscore")  # autocommit: queued at once
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                job.refresh_from_db()
                if job.is_finished:
                    break
                assert worker.poll() is None, worker_log(worker)
                time.sleep(0.5)
    finally:
        app.conf.task_always_eager = True
    assert (job.status, job.progress, job.total, job.result["scored"]) == (Job.Status.DONE, 2, 2, 4), job.error
    assert EvaluatorScore.objects.filter(job=job, status="ok").count() == 4
    assert EvaluatorSentenceScore.objects.count() == 6 and DocumentEmbedding.objects.count() == 2
