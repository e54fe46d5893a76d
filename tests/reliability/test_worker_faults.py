"""Celery workers killed mid-task during an assist run: every document is still processed exactly once.

Two worker processes consume the `assist` queue. Two faults:
1. the pool process running a task is SIGKILLed: its parent sees the loss and, with `reject_on_worker_lost`, gives
   the message back to the broker at once;
2. a whole worker (parent and pool process, as when a machine dies) is SIGKILLed while it holds a task: nobody can
   reject the message, so Redis hands it out again only after the transport's `visibility_timeout`. Production
   sets it with CELERY_VISIBILITY_TIMEOUT (6 hours by default, deploy/OPERATIONS.md); the workers here get 60 s
   through `app.conf.broker_transport_options`, set in the worker's own command line, and sweep for such messages
   every second (kombu's default sweep runs every unacked_restore_interval x unacked_restore_throttle = 100 s, which
   left the run waiting 70 s past the timeout). A sweep holds a Redis lock; a worker killed inside one leaves it
   held for unacked_mutex_expire (300 s by default), and no other worker can sweep until then: the runs that
   failed here had no redelivery at all within 150 s. The workers here let it expire after 5 s.
   A document takes under 60 s on this shared machine (the first loads the embedding model and both verifier
   members: 33 s seen under the full suite), so the timeout never redelivers a task that is still running (it would
   run twice, concurrently; the job counts each document once however often its task runs, Job.part_done).
"""

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from django.db.models import Count

from assist.models import ContextualMapping, DocumentEmbedding, PreLabel
from assist.runs import assist_start
from config.celery_app import app
from corpus.models import Document, Job, KeyFact, Project, SummarySentence

from ..work import import_generated
from ..worker import purge_queues
from .conftest import ROOT, app_env, children_of, stop_group, wait_until

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

VISIBILITY_TIMEOUT = 60
WORKER = (
    "import sys\n"
    "from config.celery_app import app\n"
    f"app.conf.broker_transport_options = {{'visibility_timeout': {VISIBILITY_TIMEOUT},"
    " 'unacked_restore_interval': 1, 'unacked_restore_throttle': 1, 'unacked_mutex_expire': 5}\n"
    "app.worker_main(sys.argv[1:])\n"
)
RECEIVED = re.compile(r"Task assist\.tasks\.assist_document_task\[([0-9a-f-]+)\] received")
SUCCEEDED = re.compile(r"Task assist\.tasks\.assist_document_task\[([0-9a-f-]+)\] succeeded")


class Worker:
    def __init__(self, name: str, log):
        self.name, self.log = name, log
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, "worker", "-Q", "assist", "--concurrency", "1", "--pool", "prefork",
             "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--hostname", f"{name}-{os.getpid()}@%h"],
            cwd=ROOT, env=app_env(), stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def running(self) -> set[str]:
        text = self.text()
        return set(RECEIVED.findall(text)) - set(SUCCEEDED.findall(text))

    def kill_pool_process(self) -> None:
        for pid in children_of(self.process.pid):
            os.kill(pid, signal.SIGKILL)

    def kill_everything(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)


def test_it_processes_every_document_once_when_workers_die_mid_task(tmp_path, record_figures):
    purge_queues("assist")
    project = Project.objects.create(slug="workerkill", name="Worker kill")
    # The first task of a pool process loads the embedding model (10-20 s on this machine): killed during it.
    import_generated(project, documents=4, summarizers=2, sentences=12, words_per_sentence=10)
    documents = Document.objects.filter(project=project).count()
    app.conf.task_always_eager = False
    workers = [Worker("a", tmp_path / "a.log"), Worker("b", tmp_path / "b.log")]
    faults = []
    phases = {}
    t0 = time.monotonic()
    mark = lambda name: phases.setdefault(name, round(time.monotonic() - t0, 1))  # noqa: E731
    try:
        for worker in workers:
            wait_until(lambda w=worker: " ready." in w.text(), timeout=60, what=f"worker {worker.name}",
                       alive=worker.process)
        mark("workers_ready")
        job = assist_start(project=project)
        a, b = workers

        # Fault 1: the pool process of worker a, while it runs a task.
        wait_until(lambda: a.running(), timeout=90, what="a task on worker a")
        time.sleep(1.0)
        held = a.running()
        a.kill_pool_process()
        faults.append(("pool process SIGKILL", sorted(held)))
        mark("pool_process_killed")

        # Fault 2: all of worker b, while it runs a task (its parent cannot give the message back).
        wait_until(lambda: b.running(), timeout=90, what="a task on worker b")
        time.sleep(1.0)
        lost_with_b = b.running()
        b.kill_everything()
        faults.append(("whole worker SIGKILL", sorted(lost_with_b)))
        mark("worker_killed")

        deadline = time.monotonic() + 210
        while time.monotonic() < deadline:
            job.refresh_from_db()
            if job.is_finished:
                mark("job_finished")
                break
            assert a.process.poll() is None, a.text()[-3000:]
            time.sleep(0.5)
    finally:
        app.conf.task_always_eager = True
        for worker in workers:
            stop_group(worker.process, grace=20)
        purge_queues("assist")
        mark("workers_stopped")

    a_text = a.text()
    redelivered = [task for task in lost_with_b if task in set(SUCCEEDED.findall(a_text))]
    sentences = SummarySentence.objects.filter(summary__document__project=project).count()
    keyfacts = KeyFact.objects.filter(document__project=project).count()
    embeddings = DocumentEmbedding.objects.filter(document__project=project)
    record_figures(documents=documents, faults_injected=len(faults), job_status=job.status,
                   job_progress=f"{job.progress}/{job.total}", redelivered_to_other_worker=len(redelivered),
                   embeddings=embeddings.count(),
                   mappings=ContextualMapping.objects.count(), expected_mappings=sentences + keyfacts,
                   prelabels=PreLabel.objects.count(), expected_prelabels=sentences,
                   duplicates=embeddings.values("document").annotate(n=Count("pk")).filter(n__gt=1).count(),
                   visibility_timeout_s=VISIBILITY_TIMEOUT, phases_s=phases)
    assert held and lost_with_b, faults
    assert "WorkerLostError" in a_text or "Process" in a_text, a_text[-3000:]
    assert (job.status, job.progress, job.total) == (Job.Status.DONE, documents, documents), (job.error, faults)
    assert redelivered == sorted(lost_with_b), (faults, "the task of the dead worker never ran on the other one")
    # Every document processed once: one embedding each, one mapping per target, one pre-label per sentence.
    assert embeddings.count() == documents
    assert embeddings.values("document").annotate(n=Count("pk")).filter(n__gt=1).count() == 0
    assert ContextualMapping.objects.count() == sentences + keyfacts
    assert PreLabel.objects.count() == sentences
    assert not job.result["errors"], job.result["errors"]
