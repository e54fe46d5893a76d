"""The annotation app's Celery tasks: long work started from its pages (HIT building), and periodic work
that beat runs (CELERY_BEAT_SCHEDULE in settings). Each task takes ids and calls one service, imported when it runs:
registering the kinds at start-up (annotation.apps) loads no more than the kinds' names."""

from celery import shared_task

from corpus.jobs import JobKind, StoredNumbers, register_kinds
from corpus.tasks import snapshot_task
from corpus.time_limits import GRACE, MINUTE

from .job_kinds import COSTS, HITS_BUILD, QUALITY, REVIEW_TALLY, TOPUPS


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=30 * MINUTE,
             time_limit=30 * MINUTE + GRACE)
def hits_build_task(job_id: int) -> None:
    # Rerunnable: building creates only the HITs that are missing.
    from .services.hits import hits_build_run

    hits_build_run(job_id=job_id)


@shared_task(name="annotation.tasks.release_expired", soft_time_limit=5 * MINUTE, time_limit=5 * MINUTE + GRACE)
def release_expired() -> int:
    """Return lapsed reservations to the pool. Reservations also lapse lazily when their annotator asks for work."""
    from .services.assignment import release_expired as release_expired_reservations

    return release_expired_reservations()


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=10 * MINUTE,
             time_limit=10 * MINUTE + GRACE)
def topups_task(job_id: int) -> None:
    # Rerunnable: a unit gets a top-up only while its HITs promise fewer labels than it needs.
    from .services.topups import topups_run

    topups_run(job_id=job_id)


register_kinds(
    JobKind(HITS_BUILD, "Build HITs", hits_build_task, unit="tasks"),
    JobKind(TOPUPS, "Top-up labels", topups_task),
    JobKind(REVIEW_TALLY, "Review list", snapshot_task, numbers=StoredNumbers(
        what="the reviewer's list", page="review",
        basis="annotation.services.review_tally.review_basis",
        compute="annotation.services.review_tally.review_tally_compute",
        access="corpus.access.get_reviewed_project",
        reload_when_shown=False,  # a reload would lose a reason being typed
        stale_note="Adjudications are shown as they are now.")),
    JobKind(QUALITY, "Quality numbers", snapshot_task, numbers=StoredNumbers(
        what="the quality numbers", page="quality_dashboard",
        basis="annotation.quality.numbers.quality_basis", compute="annotation.quality.numbers.quality_compute",
        access="corpus.access.get_managed_project", since="annotation.quality.numbers.newer_submissions",
        stale_note="Statuses, grades and decisions are shown as they are now.")),
    JobKind(COSTS, "Cost figures", snapshot_task, numbers=StoredNumbers(
        what="the cost figures", page="costs",
        basis="annotation.services.costs.costs_basis", compute="annotation.services.costs.costs_compute",
        access="corpus.access.get_managed_project", since="annotation.services.costs.newer_submissions",
        stale_note="What is committed and paid, and the budget, are shown as they are now.")),
)
