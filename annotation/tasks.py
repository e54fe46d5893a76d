"""Periodic work of the annotation app (Celery beat runs it; see CELERY_BEAT_SCHEDULE in settings)."""

from celery import shared_task

from .services.assignment import release_expired as release_expired_reservations


@shared_task(name="annotation.tasks.release_expired")
def release_expired() -> int:
    """Return lapsed reservations to the pool. Reservations also lapse lazily when their annotator asks for work."""
    return release_expired_reservations()

# --- crowd hook (issue #7): the outbox tasks live in annotation/crowd/tasks.py; import them so workers know them.
from .crowd import tasks as crowd_tasks  # noqa: E402,F401
