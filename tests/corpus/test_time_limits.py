"""Every Celery task has a soft and a hard time limit, and a job stopped by its soft limit says so in words. The tasks
are read from the Celery app's registry, so a task added tomorrow is checked the day it exists."""

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from config.celery_app import app
from corpus.models import Job

pytestmark = pytest.mark.django_db


def our_tasks():
    app.loader.import_default_modules()
    return {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}


def test_the_registry_holds_the_tasks_of_every_app():
    names = set(our_tasks())
    assert {"corpus.tasks.import_task", "annotation.tasks.topups_task", "corpus.tasks.snapshot_task",
            "assist.tasks.assist_document_task", "annotation.crowd.publish_hit"} <= names


@pytest.mark.parametrize("name", sorted(our_tasks()))
def test_each_task_stops_softly_then_hard_before_the_broker_hands_it_out_again(name):
    task = our_tasks()[name]
    assert task.soft_time_limit and task.time_limit, f"{name} has no time limit"
    assert task.soft_time_limit < task.time_limit < settings.CELERY_BROKER_TRANSPORT_OPTIONS.get(
        "visibility_timeout", 6 * 3600)


def test_a_job_past_its_soft_limit_fails_in_words(project):
    job = Job.objects.create(kind="topups", project=project)

    def slow(job):
        job.advance(1)
        raise SoftTimeLimitExceeded()

    job.run(slow)  # the worker moves on: nothing is raised

    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.error.startswith("Stopped: it ran longer than its time limit")
    assert "SoftTimeLimitExceeded" not in job.error and "()" not in job.error
