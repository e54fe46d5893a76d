"""Shared fixtures: the three users every view test needs (a manager, an annotator, an outsider), and the gates
for tests that need the real services (PostgreSQL, Redis, a Celery worker) or Debian's Chromium.

On a laptop those tests are skipped with the reason shown; in CI (`FINEGRAIN_REQUIRE_SERVICES=1`, set by .ci/run)
a missing service is a failure, never a skip.
"""

import os
import shutil
import sys
from collections.abc import Callable

import pytest
from django.conf import settings

# The reliability figures are written by the main process, which under pytest-xdist runs no test.
pytest_plugins = ["tests.reliability.figures"]

REQUIRE_SERVICES = os.environ.get("FINEGRAIN_REQUIRE_SERVICES") == "1"
CHROMIUM = os.environ.get("FINEGRAIN_CHROMIUM", "/usr/bin/chromium")
# Seconds before a test fails as hung (pytest-timeout; `timeout` in pyproject.toml for the rest). Tests that drive
# Chromium or start real processes (Celery workers, gunicorn, a private PostgreSQL) wait on them by design.
TIMEOUTS = {"services": 900, "browser": 600}


def pytest_configure(config):
    # Under pytest-xdist each worker needs its own Redis database and data folder, set before the settings are read.
    if config.getoption("numprocesses", None) and not config.pluginmanager.has_plugin("tests.parallel"):
        raise pytest.UsageError("parallel runs need `-p tests.parallel` (make test passes it)")
    # Most tests make two or three accounts, and PBKDF2 takes ~0.5 s a password on purpose: a fast hasher first (speed,
    # not security, here), the production ones after it so that their hashes still check.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher", *settings.PASSWORD_HASHERS]


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
        if item.get_closest_marker("timeout") is None:
            limits = [seconds for marker, seconds in TIMEOUTS.items() if marker in item.keywords]
            if limits:
                item.add_marker(pytest.mark.timeout(max(limits)))


@pytest.fixture(scope="session", autouse=True)
def flush_by_delete():
    """After each transactional test (live_server, `services`) pytest-django empties the database with Django's
    flush: on PostgreSQL one TRUNCATE of every table, about 0.25 s for tables that hold a few rows. DELETE FROM each
    table takes a twentieth of that, in any order, because every foreign key Django makes is checked at the commit
    (tests/test_flush_by_delete.py holds both). A flush that resets sequences or cascades keeps its TRUNCATE."""
    try:
        from django.db.backends.postgresql.operations import DatabaseOperations
    except ImportError:  # no PostgreSQL driver: SQLite's flush is already a DELETE
        yield
        return
    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return [f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};" for table in tables]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DatabaseOperations, "sql_flush", sql_flush)
        yield


@pytest.fixture(autouse=True)
def tasks_in_process(settings):
    """Ordinary tests run Celery tasks in-process; `services` tests use the real broker and worker instead."""
    from config.celery_app import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = eager


# A stand-in worker for the pages that show stored numbers (corpus.snapshots: the analytics, the reviewer's list, the
# quality numbers). A test (or a module, with `pytestmark = pytest.mark.usefixtures("numbers_worker")`) asks for it;
# every other test sees what a request does on its own: it shows the stored numbers and a button, and starts nothing.
# The `queued_numbers` marker keeps a test on its own where its module asks for the stand-in.


@pytest.fixture
def numbers_worker(request, monkeypatch):
    """A manager who always asks and a worker that is always done: wherever a page or service reads stored numbers
    that are not current, the real job computes them first (through `numbers_now`)."""
    if request.node.get_closest_marker("queued_numbers"):
        return
    import sys

    from django.urls import get_resolver

    from corpus import snapshots

    _ = get_resolver().url_patterns  # imports every view, so that each one's name is found below
    original = snapshots.numbers_state

    def numbers_state(project, code, variant=""):
        state = original(project, code, variant)
        if state.current or state.running:
            return state
        numbers_now(project, code, variant)
        return original(project, code, variant)

    # Every module of the apps that took the function by name, not corpus.snapshots itself (its own callers compute).
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in ("annotation", "exports") and getattr(module, "numbers_state", None) is original:
            monkeypatch.setattr(module, "numbers_state", numbers_state)


def numbers_now(project, code: str, variant: str = ""):
    """Bring stored numbers up to date here, as a click on the page's button and a worker would: the job row, then its
    task's work in this process. Returns the job (None when they were current)."""
    from corpus.snapshots import numbers_run, numbers_update

    job = numbers_update(project, code, variant)
    if job is not None:
        numbers_run(job_id=job.pk)
        job.refresh_from_db()
    return job


def transactional(item: pytest.Item) -> bool:
    """Whether pytest-django runs `item` outside a transaction (and truncates the tables after it)."""
    marker = item.get_closest_marker("django_db")
    if marker and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences")):
        return True
    return bool({"transactional_db", "live_server"} & set(getattr(item, "fixturenames", ())))


def project_built_once(build: Callable, *, slug: str = "alpha", name: str = "Alpha") -> Callable:
    """A module-scoped fixture for a module whose tests read a project that is slow to build: `build(project)`
    runs once, inside a transaction that stays open for the module and is rolled back after its last test. Each test
    still runs in a savepoint of its own (pytest-django's `db`), so what a test writes is gone before the next one.
    The fixture gives the project's id; a module overrides `project` to read a fresh row per test. Not for modules
    with transactional tests (live_server, `services`), which would truncate what the transaction holds and could not
    see what it has not committed: the fixture refuses them. The shared project is in the database for every test of
    the module, so a test that makes a project of its own scopes its queries to it."""

    @pytest.fixture(scope="module")
    def built(request, django_db_setup, django_db_blocker):
        from django.db import transaction

        from corpus.models import Project

        if any(transactional(item) for item in request.session.items if getattr(item, "module", None) is request.module):
            raise pytest.UsageError(f"{request.module.__name__} builds a project once for its tests and also has "
                                    "transactional tests: move those to a module of their own")
        with django_db_blocker.unblock():
            # Asked for inside a test (getfixturevalue) it would be built in the test's own transaction and gone
            # with it: a module fixture must be an argument, so that pytest sets it up before the test's `db`.
            if any(getattr(block, "_from_testcase", False) for block in transaction.get_connection().atomic_blocks):
                raise pytest.UsageError(f"{request.fixturename} is set up inside a test's transaction: ask for it as "
                                        "an argument of the test or of a module-scoped fixture")
            atomic = transaction.atomic()
            atomic.__enter__()
            try:
                project = Project.objects.create(slug=slug, name=name)
                build(project)
            except BaseException:
                atomic.__exit__(*sys.exc_info())
                raise
        try:
            yield project.pk
        finally:
            with django_db_blocker.unblock():
                transaction.set_rollback(True)
                atomic.__exit__(None, None, None)

    return built


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
