"""Publishing through a real Celery worker while Redis restarts, run by tests/reliability/test_crowd_faults.py in a
pytest subprocess whose DATABASE_URL is a private PostgreSQL cluster and whose CELERY_BROKER_URL is a private
redis-server (REL_REDIS_PORT) that this file starts and restarts. Not collected on its own.

MTurk is tests/crowd/mturk_server.py on loopback: the worker process is a separate process, so botocore's Stubber
cannot reach into it; the endpoint is a setting (FINEGRAIN_MTURK_SANDBOX_ENDPOINT), so the worker runs the real
boto3 client against the fake server, which honours UniqueRequestToken as MTurk does and records every call.
Two of its create calls create the HIT and lose the answer (500), and the worker has no botocore retries, so those
HITs are created again by a second run of their task, with the same token. Figures go to REL_FIGURES (JSON).
"""

import json
import os
import re
import time
from collections import Counter
from io import StringIO
from pathlib import Path

import pytest
import redis as redis_client
from django.core.management import call_command

from annotation.crowd.tasks import drain_publishing
from annotation.models import CrowdBatch, CrowdHit
from annotation.services.hits import build_hits
from config.celery_app import app
from corpus.models import Project
from tests.crowd.mturk_server import FakeMTurk, start
from tests.reliability.conftest import ROOT, PrivateRedis, wait_until
from tests.work import import_generated
from tests.worker import celery_worker, worker_log

pytestmark = pytest.mark.django_db(transaction=True)
FIGURES = Path(os.environ["REL_FIGURES"])
SITE = "https://finegrain.example.org"
REQUEUE_SECONDS = 3  # beat's "pending after a while" (production: FINEGRAIN_PUBLISH_REQUEUE_SECONDS, 900)
SUCCEEDED = re.compile(r"Task annotation\.crowd\.publish_hit\[[0-9a-f-]+\] succeeded")
RETRIED = re.compile(r"Task annotation\.crowd\.publish_hit\[[0-9a-f-]+\] retry")


def save_figures(name: str, **figures) -> None:
    stored = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    stored[name] = figures
    FIGURES.write_text(json.dumps(stored))


def test_redis_restarted_while_a_worker_publishes(tmp_path, settings):
    settings.SITE_URL = SITE  # MTurk shows HITs from HTTPS URLs only: the plan refuses anything else
    settings.FINEGRAIN_PUBLISH_REQUEUE_SECONDS = REQUEUE_SECONDS
    project = Project.objects.create(slug="publishing", name="Publishing", attention_check_rate=0.0)
    import_generated(project, documents=6, summarizers=5, sentences=3, words_per_sentence=8)
    build_hits(project, "fv")
    hits = project.hits.filter(task="fv").count()

    mturk = FakeMTurk(create_delay=0.25, lose_answers={4, 12})
    server = start(mturk)
    broker = PrivateRedis(tmp_path)
    broker.port = int(os.environ["REL_REDIS_PORT"])  # CELERY_BROKER_URL names it: the app connects nowhere else
    assert app.conf.broker_url == broker.url, app.conf.broker_url
    broker.start()
    worker_env = {"SITE_URL": SITE, "FINEGRAIN_MTURK_SANDBOX_ENDPOINT": mturk.url,
                  "FINEGRAIN_MTURK_ENDPOINT": mturk.url, "AWS_ACCESS_KEY_ID": "testing",
                  "AWS_SECRET_ACCESS_KEY": "testing", "FINEGRAIN_MTURK_MAX_ATTEMPTS": "0"}
    creates = lambda: mturk.count("CreateHITWithHITType")  # noqa: E731
    published = lambda: CrowdHit.objects.filter(published_at__isnull=False).count()  # noqa: E731
    restart_at = [hits // 5, 3 * hits // 5]  # provider create calls seen before each restart
    lost, published_at_restart, requeued = [], [], []
    t0 = time.monotonic()
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        with celery_worker(queues="crowd", concurrency=2, env=worker_env) as worker:
            wait_until(lambda: " ready." in worker_log(worker), timeout=90, what="the crowd worker", alive=worker)
            ready_s = round(time.monotonic() - t0, 1)
            call_command("publish", project=project.slug, task="fv", provider="mturk", sandbox=True, yes=True,
                         no_wait=True, stdout=StringIO(), stderr=StringIO())
            batch = CrowdBatch.objects.get(project=project)
            queued_by_command = CrowdHit.objects.filter(batch=batch, queued_at__isnull=False).count()
            last_drain = time.monotonic()
            deadline = time.monotonic() + 180
            while CrowdBatch.objects.get(pk=batch.pk).status != CrowdBatch.Status.PUBLISHED:
                assert time.monotonic() < deadline, (published(), hits, worker_log(worker))
                assert worker.poll() is None, worker_log(worker)
                if restart_at and creates() >= restart_at[0]:
                    restart_at.pop(0)
                    client = redis_client.Redis(port=broker.port)
                    # What the restart wipes (no persistence): queued messages and those delivered, not yet acked.
                    lost.append(client.llen("crowd") + client.hlen("unacked"))
                    published_at_restart.append(published())
                    broker.restart()
                elif time.monotonic() - last_drain >= REQUEUE_SECONDS:
                    requeued.append(drain_publishing()["requeued"])  # what beat runs
                    last_drain = time.monotonic()
                time.sleep(0.2)
            log = worker_log(worker)
            worker.log.seek(0)
            full_log = worker.log.read()
            if os.environ.get("FINEGRAIN_RELIABILITY_KEEP_LOGS"):
                (ROOT / "benchmarks" / "out" / "publishing-worker.log").write_text(full_log)
    finally:
        app.conf.task_always_eager = eager
        broker.kill()
        server.shutdown()

    crowd_hits = list(CrowdHit.objects.filter(batch=batch))
    create_tokens = [body.get("UniqueRequestToken") for name, body in mturk.calls if name == "CreateHITWithHITType"]
    ours = {crowd_hit.request_token: crowd_hit for crowd_hit in crowd_hits}
    provider_ids = set(mturk.hits)
    recorded_ids = {crowd_hit.external_id for crowd_hit in crowd_hits}
    # Provider HITs per HIT of ours (through the token in RequesterAnnotation); a HIT with no token of ours counts too.
    per_hit = Counter(ours[hit["RequesterAnnotation"]].hit_id if hit["RequesterAnnotation"] in ours else None
                      for hit in mturk.hits.values())
    figures = {
        "hits": hits,
        "faults_injected": broker.restarts + mturk.lost_answers,
        "redis_restarts": broker.restarts,
        "messages_lost_by_restarts": sum(lost),
        "published_when_restarted": published_at_restart,
        "create_hit_calls": len(create_tokens),
        "answers_lost": mturk.lost_answers,
        "repeated_tokens_answered_existing": mturk.refused_repeats,
        "hits_on_provider": len(provider_ids),
        "crowd_hits_with_remote_id": sum(1 for crowd_hit in crowd_hits if crowd_hit.external_id),
        "lost": hits - len(recorded_ids & provider_ids),
        "duplicates": sum(n - 1 for hit_id, n in per_hit.items() if hit_id is not None) + per_hit[None],
        "queued_by_command": queued_by_command,
        "requeued_by_drains": sum(requeued),
        "drains": len(requeued),
        "task_runs_succeeded": len(SUCCEEDED.findall(full_log)),
        "task_retries": len(RETRIED.findall(full_log)),
        "worker_ready_s": ready_s,
        "batch_status": CrowdBatch.objects.get(pk=batch.pk).status,
    }
    save_figures("redis_restart_while_publishing", **figures)

    assert broker.restarts == 2 and figures["messages_lost_by_restarts"] > 0, (lost, log)
    assert figures["batch_status"] == "published"
    # Every HIT on the provider exactly once, under the token we recorded for it, and its id recorded here.
    assert len(crowd_hits) == hits == len(provider_ids) == len(recorded_ids)
    assert recorded_ids == provider_ids
    assert all(mturk.tokens[token] == crowd_hit.external_id for token, crowd_hit in ours.items())
    assert set(create_tokens) == set(ours)  # no create call carried a token of ours we did not record
    assert figures["duplicates"] == 0 and figures["lost"] == 0
    # The token path ran: each lost answer was followed by a repeat that MTurk answered with the existing HIT.
    assert mturk.lost_answers == 2 and mturk.refused_repeats >= 2
    assert figures["requeued_by_drains"] > 0
