"""Shared fixtures: the three users every view test needs (a manager, an annotator, an outsider), and the gates
for tests that need the real services (PostgreSQL, Redis, a Celery worker) or Debian's Chromium.

On a laptop those tests are skipped with the reason shown; in CI (`FINEGRAIN_REQUIRE_SERVICES=1`, set by .ci/run)
a missing service is a failure, never a skip.
"""

import os
import shutil

import pytest
from django.conf import settings

REQUIRE_SERVICES = os.environ.get("FINEGRAIN_REQUIRE_SERVICES") == "1"
CHROMIUM = os.environ.get("FINEGRAIN_CHROMIUM", "/usr/bin/chromium")


def services_missing() -> str | None:
    from django.db import connections

    if connections["default"].vendor != "postgresql":
        return "needs PostgreSQL: set DATABASE_URL (bash .ci/run does)"
    if not settings.CELERY_BROKER_URL.startswith("redis"):
        return "needs a Redis broker: set CELERY_BROKER_URL (bash .ci/run does)"
    return None


def services_unreachable() -> str | None:
    import psycopg
    import redis

    db = settings.DATABASES["default"]
    try:
        psycopg.connect(
            host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"], password=db["PASSWORD"],
            dbname="postgres", connect_timeout=5,
        ).close()
    except psycopg.Error as exc:
        return f"PostgreSQL is unreachable: {exc}"
    try:
        redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        return f"Redis is unreachable at {settings.CELERY_BROKER_URL}: {exc}"
    return None


def pytest_sessionstart(session):
    if not REQUIRE_SERVICES:
        return
    reason = services_missing() or services_unreachable()
    if reason is None and shutil.which(CHROMIUM) is None:
        reason = f"Debian's Chromium is missing at {CHROMIUM}"
    if reason:
        pytest.exit(f"FINEGRAIN_REQUIRE_SERVICES=1 but {reason}", returncode=3)


def pytest_collection_modifyitems(config, items):
    services_reason = services_missing()
    chromium_reason = None if shutil.which(CHROMIUM) else f"needs Debian's Chromium at {CHROMIUM} (make browsers)"
    for item in items:
        if "services" in item.keywords and services_reason:
            item.add_marker(pytest.mark.skip(reason=services_reason))
        if "browser" in item.keywords and chromium_reason:
            item.add_marker(pytest.mark.skip(reason=chromium_reason))


@pytest.fixture(autouse=True)
def tasks_in_process(settings):
    """Ordinary tests run Celery tasks in-process; `services` tests use the real broker and worker instead."""
    from config.celery_app import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = eager


@pytest.fixture(autouse=True)
def review_worker(request, monkeypatch):
    """The reviewer's page lists what a job tallied (annotation.services.review_tally); here a worker that is always
    done: when a view finds the tally stale, the real job tallies the labels before the view goes on. Tests marked
    `queued_review` see what a request does on its own: it queues the job and says so."""
    if request.node.get_closest_marker("queued_review"):
        return
    from annotation.services import review_tally
    from annotation.views import review

    def current_tally(project):
        tally, current, fingerprint = review_tally.current_tally(project)
        if not current:
            job = review_tally.review_tally_job(project, fingerprint=fingerprint)
            review_tally.review_tally_run(job_id=job.pk)
            tally, current, fingerprint = review_tally.current_tally(project)
        return tally, current, fingerprint

    monkeypatch.setattr(review, "current_tally", current_tally)


@pytest.fixture(autouse=True)
def quality_worker(request, monkeypatch):
    """The quality pages show numbers a job stored (annotation.quality.numbers); here a worker that is always done:
    when a view finds them older than the work, the queued job runs before the view goes on. Tests marked
    `queued_quality` see what a request does on its own: it queues the job and says the numbers are being updated."""
    if request.node.get_closest_marker("queued_quality"):
        return
    from annotation.quality import numbers
    from annotation.views import progress, quality
    from corpus.models import Job
    from corpus.snapshots import snapshot_run

    def quality_numbers(project, *, user=None):
        found = numbers.quality_numbers(project, user=user)
        if found.job is not None and found.job.status in (Job.Status.QUEUED, Job.Status.RUNNING):
            snapshot_run(job_id=found.job.pk)
            found = numbers.quality_numbers(project, user=user)
        return found

    monkeypatch.setattr(quality, "quality_numbers", quality_numbers)
    monkeypatch.setattr(progress, "quality_numbers", quality_numbers)


@pytest.fixture
def project(db):
    from corpus.models import Project

    return Project.objects.create(slug="alpha", name="Alpha")


@pytest.fixture
def other_project(db):
    from corpus.models import Project

    return Project.objects.create(slug="beta", name="Beta")


@pytest.fixture
def manager(db, project, django_user_model):
    from corpus.models import Membership
    from tests.work import may_create_projects

    user = may_create_projects(django_user_model.objects.create_user("mia", password="pw-manager-1"))
    Membership.objects.create(project=project, user=user, role=Membership.Role.MANAGER)
    return user


@pytest.fixture
def annotator(db, project, django_user_model):
    from corpus.models import Membership

    user = django_user_model.objects.create_user("ann", password="pw-annotator-1")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    return user


@pytest.fixture
def outsider(db, other_project, django_user_model):
    """A manager, but of another project."""
    from corpus.models import Membership
    from tests.work import may_create_projects

    user = may_create_projects(django_user_model.objects.create_user("otto", password="pw-outsider-1"))
    Membership.objects.create(project=other_project, user=user, role=Membership.Role.MANAGER)
    return user


@pytest.fixture
def other_annotator(db, project, django_user_model):
    """A second annotator of the same project: must never see the first one's work."""
    from corpus.models import Membership

    user = django_user_model.objects.create_user("bea", password="pw-annotator-2")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    return user
