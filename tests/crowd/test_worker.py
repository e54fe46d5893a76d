"""The outbox through the real Redis broker: a decision queued by `enqueue` is routed to the `crowd` queue and
carried out by a worker process that serves only that queue (CI, PostgreSQL)."""

import time

import pytest
from django.db import transaction

from annotation.crowd.tasks import enqueue
from annotation.models import Annotator, Decision
from config.celery_app import app
from corpus.models import Project

from ..worker import celery_worker, purge_queues, worker_log


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_crowd_worker_carries_out_a_queued_decision():
    purge_queues("default", "assist", "crowd")
    project = Project.objects.create(slug="crowd-worker", name="Crowd worker")
    annotator = Annotator.objects.create(provider="link", external_id="link-1")
    app.conf.task_always_eager = False
    try:
        with celery_worker(queues="crowd") as worker:
            with transaction.atomic():
                decision = Decision.objects.create(project=project, annotator=annotator, kind="block",
                                                   idempotency_key="block:worker-test", reason="test")
                enqueue(decision)  # queued when the transaction commits
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                decision.refresh_from_db()
                if decision.status != "pending":
                    break
                assert worker.poll() is None, worker_log(worker)
                time.sleep(0.5)
            log = worker_log(worker)
    finally:
        app.conf.task_always_eager = True
    assert decision.status == "done" and decision.attempts == 1, log
    assert annotator.status_in(project) == "blocked"
