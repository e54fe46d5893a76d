"""Crowd fault scenarios, run by tests/reliability/test_crowd_faults.py in a pytest subprocess whose DATABASE_URL is
a private PostgreSQL cluster (REL_PG_DIR, REL_PG_PORT) that this file restarts; Redis is a private redis-server this
file starts and restarts. Not collected on its own (its name does not match test_*.py).

The MTurk client is the crowd tests' real boto3 client under botocore's Stubber: every provider call must be one
the scenario queued, and `assert_no_pending_responses` proves each queued call happened, so the count of stubbed
calls is exact. Figures go to REL_FIGURES (JSON).
"""

import json
import os
from decimal import Decimal
from pathlib import Path

import pytest
from botocore import xform_name
from botocore.stub import ANY
from django.db import Error as DatabaseError
from django.db import connection

from annotation.crowd import outbox
from annotation.crowd.sync import SyncResult, sync_batch, sync_project
from annotation.crowd.tasks import drain_outbox
from annotation.models import CrowdBatch, CrowdHit, Decision, LedgerEntry
from config.celery_app import app
from tests.crowd.conftest import corpus, crowd_settings, mturk, mturk_client  # noqa: F401  (fixtures)
from tests.crowd.stubs import assignment as remote
from tests.crowd.stubs import mturk_id
from tests.crowd.test_mturk_cycle import publish_fv, work_in_iframe
from tests.reliability.conftest import PrivatePostgres, PrivateRedis

pytestmark = pytest.mark.django_db(transaction=True)
WORKERS = ["A1WORKERONE", "A2WORKERTWO", "A3WORKERTHREE"]
FIGURES = Path(os.environ["REL_FIGURES"])


def save_figures(name: str, **figures) -> None:
    stored = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    stored[name] = figures
    FIGURES.write_text(json.dumps(stored))


def private_postgres() -> PrivatePostgres:
    server = PrivatePostgres(Path(os.environ["REL_PG_DIR"]))
    server.port = int(os.environ["REL_PG_PORT"])
    return server


class CountingStubber:
    """Counts the provider calls the Stubber answered, by operation."""

    def __init__(self, client):
        self.calls: dict[str, int] = {}
        # before-parameter-build fires on every call; the Stubber answers at before-call, which stops the chain.
        client.meta.events.register("before-parameter-build.mturk.*", self.count)

    def count(self, model, **kwargs):
        name = xform_name(model.name)
        self.calls[name] = self.calls.get(name, 0) + 1


def three_workers_submit(corpus, provider, stubber):
    batch, hit_ids = publish_fv(corpus, provider, stubber)
    for n, worker in enumerate(WORKERS):
        work_in_iframe(batch, hit_ids[0], worker, n, passing=True)
    return batch, hit_ids


def expect_listing(stubber, hit_ids):
    stubber.add_response("list_assignments_for_hit", {
        "Assignments": [remote(mturk_id("3ASG", n), hit_ids[0], worker) for n, worker in enumerate(WORKERS)],
        "NumResults": 3}, {"HITId": hit_ids[0], "MaxResults": 100, "AssignmentStatuses": ANY})
    for hit_id in hit_ids[1:]:
        stubber.add_response("list_assignments_for_hit", {"Assignments": [], "NumResults": 0},
                             {"HITId": hit_id, "MaxResults": 100, "AssignmentStatuses": ANY})


def expect_approve(stubber, n):
    stubber.add_response("approve_assignment", {}, {"AssignmentId": mturk_id("3ASG", n), "RequesterFeedback": ANY})


def ledger_figures(corpus, batch):
    rewards = LedgerEntry.objects.filter(project=corpus, kind="reward")
    return {
        "decisions_done": Decision.objects.filter(project=corpus, status="done").count(),
        "decisions_other": Decision.objects.filter(project=corpus).exclude(status="done").count(),
        "ledger_rewards": rewards.count(),
        "ledger_fees": LedgerEntry.objects.filter(project=corpus, kind="reward_fee").count(),
        "rewards_paid_usd": str(sum((entry.amount_usd for entry in rewards), Decimal("0"))),
        "crowd_hits": CrowdHit.objects.filter(batch=batch).count(),
        "crowd_hits_with_remote_id": CrowdHit.objects.filter(batch=batch).exclude(external_id="").count(),
    }


def test_postgres_restarted_mid_sync(corpus, mturk, mturk_client):
    """sync_crowd's outbox step: PostgreSQL dies right after MTurk approved the 2nd assignment, before the ledger
    and the decision were written. The re-run finds MTurk already approved it (get_assignment) and records it once."""
    provider, stubber = mturk
    counter = CountingStubber(mturk_client[0])
    postgres = private_postgres()
    batch, hit_ids = three_workers_submit(corpus, provider, stubber)
    # Decided at sync, once MTurk has confirmed the workers: nothing before.
    assert not Decision.objects.filter(project=corpus).exists()

    real_approve = provider.approve
    calls = []

    def approve_then_crash(claim, feedback, **options):
        response = real_approve(claim, feedback, **options)
        calls.append(claim.external_assignment_id)
        if len(calls) == 2:
            postgres.restart()
        return response

    provider.approve = approve_then_crash
    expect_listing(stubber, hit_ids)
    for n in range(3):
        expect_approve(stubber, n)
    failed = None
    try:
        sync_project(corpus, providers={("mturk", True): provider})
    except DatabaseError as error:
        failed = type(error).__name__
    assert failed, "the restart did not interrupt the sync"
    connection.close()
    # The 3rd approval was queued but never sent: drop it from the Stubber's queue, the re-run sends it.
    stubber._queue.clear()
    provider.approve = real_approve
    approvals = list(Decision.objects.filter(project=corpus, kind="approve").values_list("pk", flat=True))
    assert len(approvals) == 3 and Decision.objects.filter(project=corpus).count() == 3

    interrupted = Decision.objects.get(pk__in=approvals, attempts=1, status="pending",
                                       assignment__crowd_claim__external_assignment_id=calls[1])
    expect_listing(stubber, hit_ids)
    for pk in Decision.objects.filter(project=corpus, status="pending").values_list("pk", flat=True):
        claim_id = Decision.objects.get(pk=pk).assignment.crowd_claim.external_assignment_id
        n = int(claim_id[-1])
        if pk == interrupted.pk:
            stubber.add_client_error("approve_assignment", service_error_code="RequestError",
                                     service_message="This operation can be called with a status of: Submitted",
                                     http_status_code=400,
                                     expected_params={"AssignmentId": claim_id, "RequesterFeedback": ANY})
            stubber.add_response("get_assignment", {"Assignment": remote(claim_id, hit_ids[0], WORKERS[n],
                                                                         status="Approved"),
                                                    "HIT": {"HITId": hit_ids[0]}}, {"AssignmentId": claim_id})
        else:
            expect_approve(stubber, n)
    again = sync_project(corpus, providers={("mturk", True): provider})
    stubber.assert_no_pending_responses()

    figures = ledger_figures(corpus, batch)
    save_figures("postgres_restart_mid_sync", faults_injected=postgres.restarts, interrupted_by=failed,
                 stubbed_calls=counter.calls, rerun_decisions=again.decisions, **figures)
    assert postgres.restarts == 1
    assert figures["decisions_done"] == 3 and figures["decisions_other"] == 0
    assert figures["ledger_rewards"] == 3 and figures["ledger_fees"] == 3  # one reward per approval, no double
    assert Decimal(figures["rewards_paid_usd"]) == 3 * batch.reward_usd
    assert figures["crowd_hits"] == figures["crowd_hits_with_remote_id"] == len(hit_ids)
    # MTurk was told to approve each assignment once, plus one refused repeat that the status check recognised.
    assert counter.calls["approve_assignment"] == 4 and counter.calls["get_assignment"] == 1


def consume(redis_url: str, limit: int, provider) -> int:
    """A worker's loop, in this process so the Stubber-backed provider can be injected: take up to `limit` queued
    execute_decision messages off the `crowd` queue, run the task's body, acknowledge."""
    done = 0
    with app.connection_for_read(redis_url) as conn:
        queue = conn.SimpleQueue("crowd")
        while done < limit:
            try:
                message = queue.get(timeout=1)
            except queue.Empty:
                break
            assert message.headers["task"] == "annotation.crowd.execute_decision", message.headers
            (decision_id,), _, _ = message.payload
            outbox.execute_decision(decision_id, providers={("mturk", True): provider})
            message.ack()
            done += 1
        queue.close()
    return done


def test_redis_restarted_while_the_outbox_is_queued(corpus, mturk, mturk_client, tmp_path):
    """Decisions queued on Redis (drain_outbox, what beat runs) are lost twice by Redis restarts (no persistence):
    before anything ran, and after one of three ran. The next drain re-queues only what is still pending."""
    import redis as redis_client

    provider, stubber = mturk
    counter = CountingStubber(mturk_client[0])
    broker = PrivateRedis(tmp_path)
    broker.port = int(os.environ["REL_REDIS_PORT"])  # CELERY_BROKER_URL names it: the app connects nowhere else
    assert app.conf.broker_url == broker.url, app.conf.broker_url
    broker.start()
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        batch, hit_ids = three_workers_submit(corpus, provider, stubber)
        expect_listing(stubber, hit_ids)
        sync_batch(batch, provider, SyncResult())  # confirm the workers with MTurk; the outbox is left to Celery
        length = lambda: redis_client.Redis(port=broker.port).llen("crowd")  # noqa: E731
        queued = [drain_outbox()]
        assert length() == 3
        broker.restart()
        lost_first = 3 - length()
        queued.append(drain_outbox())
        expect_approve(stubber, 0)
        expect_approve(stubber, 1)
        expect_approve(stubber, 2)
        ran = consume(broker.url, 1, provider)
        broker.restart()
        lost_second = 2 - length()
        queued.append(drain_outbox())
        ran += consume(broker.url, 10, provider)
        queued.append(drain_outbox())
        stubber.assert_no_pending_responses()
    finally:
        app.conf.task_always_eager = eager
        broker.kill()

    figures = ledger_figures(corpus, batch)
    save_figures("redis_restart_with_outbox_queued", faults_injected=broker.restarts,
                 messages_lost_by_restarts=lost_first + lost_second, queued_per_drain=queued, executed=ran,
                 stubbed_calls=counter.calls, **figures)
    assert queued == [3, 3, 2, 0] and lost_first == 3 and lost_second == 2
    assert figures["decisions_done"] == 3 and figures["decisions_other"] == 0
    assert figures["ledger_rewards"] == 3 and figures["ledger_fees"] == 3
    assert counter.calls["approve_assignment"] == 3
    assert CrowdBatch.objects.get(pk=batch.pk).status == "published"
