"""Publishing through the crowd queue, in-process against the Stubber: `publish_queue` writes one row per HIT and
queues one task each; a task delivered twice creates nothing twice; beat re-queues only rows pending long after
their task was queued; a refused HIT waits for a person, and running publish again retries it.

The real worker and a real Redis restart are in tests/reliability/scenarios/crowd_publishing.py."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from annotation.crowd.base import ProviderTransientError
from annotation.crowd.publishing import plan_publish, publish, publish_queue, publishing_requeue
from annotation.crowd.tasks import publish_hit
from annotation.models import CrowdBatch, CrowdHit
from corpus.models import Job
from tests.crowd.stubs import expect_create_hit, expect_hit_type, expect_qualification_types, mturk_id

pytestmark = pytest.mark.django_db


@pytest.fixture
def stubbed(mturk, monkeypatch):
    """The tasks and the command build their provider with get_provider: give them the Stubber-backed one."""
    provider, stubber = mturk
    for module in ("annotation.crowd.publishing", "annotation.management.commands.publish"):
        monkeypatch.setattr(f"{module}.get_provider", lambda name, sandbox=None: provider)
    return provider, stubber


def test_it_queues_one_task_per_hit_and_a_repeated_task_creates_nothing(corpus, stubbed,
                                                                       django_capture_on_commit_callbacks):
    provider, stubber = stubbed
    expect_qualification_types(stubber)
    hit_type = expect_hit_type(stubber)
    for n in range(4):
        expect_create_hit(stubber, mturk_id("3HIT", n), hit_type)
    plan = plan_publish(project=corpus, task="fv", provider="mturk", sandbox=True)
    job = Job.objects.create(project=corpus, kind="crowd_publish")

    with django_capture_on_commit_callbacks(execute=True) as queued:
        batch = publish_queue(plan=plan, job=job)  # the tasks run in-process here (no broker)

    assert len(queued) == 1 and CrowdHit.objects.filter(batch=batch, queued_at__isnull=False).count() == 4
    batch.refresh_from_db()
    assert batch.status == "published" and batch.prepared_at is not None
    assert sorted(batch.crowd_hits.values_list("external_id", flat=True)) == [mturk_id("3HIT", n) for n in range(4)]
    job.refresh_from_db()
    assert (job.status, job.progress, job.total) == ("done", 4, 4)
    # Delivered again (a redelivery, beat's re-queue): the row is published, the provider is not called.
    assert [publish_hit.delay(pk).get() for pk in batch.crowd_hits.values_list("pk", flat=True)] == ["published"] * 4
    stubber.assert_no_pending_responses()


def test_beat_requeues_only_stale_rows_and_a_refused_hit_waits_for_a_person(corpus, stubbed, settings):
    provider, stubber = stubbed
    plan = plan_publish(project=corpus, task="fv", provider="mturk", sandbox=True)
    batch = publish_queue(plan=plan)  # never committed in this test: the queued messages are "lost"
    job = Job.objects.create(project=corpus, kind="crowd_publish", status="running", total=4)
    CrowdBatch.objects.filter(pk=batch.pk).update(job=job)
    assert publishing_requeue() == {"requeued": 0, "finished": 0}  # queued a moment ago: not lost yet

    CrowdHit.objects.filter(batch=batch).update(queued_at=timezone.now() - timedelta(
        seconds=settings.FINEGRAIN_PUBLISH_REQUEUE_SECONDS + 1))
    expect_qualification_types(stubber)
    hit_type = expect_hit_type(stubber)
    stubber.add_client_error("create_hit_with_hit_type", service_error_code="RequestError", http_status_code=400,
                             service_message="Insufficient funds.",
                             modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.InsufficientFunds"})
    for n in (1, 2, 3):
        expect_create_hit(stubber, mturk_id("3HIT", n), hit_type)
    assert publishing_requeue() == {"requeued": 4, "finished": 0}  # each task runs in-process

    refused = CrowdHit.objects.get(batch=batch, failed_at__isnull=False)
    assert "InsufficientFunds" in refused.last_error and not refused.external_id
    assert CrowdBatch.objects.get(pk=batch.pk).status == "publishing"
    job.refresh_from_db()
    assert job.status == "failed" and "run publish again" in job.error
    refused.queued_at = timezone.now() - timedelta(days=1)
    refused.save()
    assert publishing_requeue()["requeued"] == 0  # a refusal is not retried by beat

    # A person runs publish again: the refused HIT is tried again with its token, and the batch is finished.
    expect_create_hit(stubber, mturk_id("3HIT", 0), hit_type, token=refused.request_token)
    again = plan_publish(project=corpus, task="fv", provider="mturk", sandbox=True)
    assert [item.hit_id for item in again.items] == [refused.hit_id]
    finished = publish(plan=again, provider=provider)
    assert finished.pk == batch.pk and finished.status == "published"
    assert CrowdHit.objects.filter(batch=batch, failed_at__isnull=True).exclude(external_id="").count() == 4
    stubber.assert_no_pending_responses()


def test_the_command_resumes_an_interrupted_publication(corpus, stubbed):
    provider, stubber = stubbed
    expect_qualification_types(stubber)
    hit_type = expect_hit_type(stubber)
    expect_create_hit(stubber, mturk_id("3HIT", 0), hit_type)
    stubber.add_client_error("create_hit_with_hit_type", service_error_code="ServiceFault", http_status_code=500)
    plan = plan_publish(project=corpus, task="fv", provider="mturk", sandbox=True)
    with pytest.raises(ProviderTransientError):  # MTurk's answer for the 2nd HIT never came
        publish(plan=plan, provider=provider)
    for n in (1, 2, 3):
        expect_create_hit(stubber, mturk_id("3HIT", n), hit_type)

    out = StringIO()
    call_command("publish", project=corpus.slug, task="fv", provider="mturk", sandbox=True, yes=True, stdout=out,
                 stderr=StringIO())

    assert "3 fv HITs to publish" in out.getvalue() and "Published batch" in out.getvalue()
    assert CrowdBatch.objects.get().status == "published"
    stubber.assert_no_pending_responses()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("refused", [False, True])
def test_the_command_follows_the_crowd_workers_until_the_batch_is_published_or_refused(corpus, stubbed, monkeypatch,
                                                                                      refused):
    # As with a broker, but each queued task runs in-process as soon as the rows are committed.
    monkeypatch.setattr("annotation.management.commands.publish.publishing_is_queued", lambda: True)
    provider, stubber = stubbed
    expect_qualification_types(stubber)
    hit_type = expect_hit_type(stubber)
    for n in range(4):
        if refused:
            stubber.add_client_error("create_hit_with_hit_type", service_error_code="RequestError",
                                     service_message="Insufficient funds.", http_status_code=400)
        else:
            expect_create_hit(stubber, mturk_id("3HIT", n), hit_type)
    out = StringIO()

    if refused:
        with pytest.raises(CommandError, match="4 HITs were refused"):
            call_command("publish", project=corpus.slug, task="fv", provider="mturk", sandbox=True, yes=True,
                         stdout=out, stderr=StringIO())
    else:
        call_command("publish", project=corpus.slug, task="fv", provider="mturk", sandbox=True, yes=True, stdout=out,
                     stderr=StringIO())
        assert "Published batch" in out.getvalue()

    assert "Queued 4 HITs" in out.getvalue() and "Waiting for the crowd workers" in out.getvalue()
    assert CrowdBatch.objects.get().status == ("publishing" if refused else "published")
    stubber.assert_no_pending_responses()
