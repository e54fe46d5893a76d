"""Each pytest-xdist worker gets its own Redis database, cache and data folder, and the longest modules are handed out
first (loaded with `-p tests.parallel`).

pytest-django already gives each worker its own test database (test_<name>_gw0, ...); the rest is read from the
environment when config/settings.py is imported, which happens before any conftest.py is loaded, so this runs as an
early plugin and changes the environment first. Child processes (the Celery workers of `services` tests, gunicorn)
inherit the same values.

- Redis: worker N uses the database of CELERY_BROKER_URL plus N, wrapping past the server's last one (16 by default):
  /10 gives /10 and /11; CI's /15 gives /15 and /0. The cache (CACHE_URL) follows the broker, as in the settings.
- Files: FINEGRAIN_DATA_DIR (the embedded broker's folder, media, static) is a folder of its own per worker.
"""

import atexit
import os
import shutil
import tempfile
from urllib.parse import urlsplit, urlunsplit

REDIS_DATABASES = 16


def redis_url_for(url: str, worker: int) -> str:
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(base + worker) % REDIS_DATABASES}"))


def isolate(worker_id: str) -> None:
    worker = int(worker_id.removeprefix("gw"))
    broker = os.environ.get("CELERY_BROKER_URL", "")
    if broker.startswith("redis"):
        cache = os.environ.get("CACHE_URL") or broker
        os.environ["CELERY_BROKER_URL"] = redis_url_for(broker, worker)
        if cache.startswith("redis"):
            os.environ["CACHE_URL"] = redis_url_for(cache, worker)
    data = tempfile.mkdtemp(prefix=f"finegrain-tests-{worker_id}-")
    atexit.register(shutil.rmtree, data, ignore_errors=True)
    os.environ["FINEGRAIN_DATA_DIR"] = data
    # Set on their own, these would still be shared; under the worker's folder they are not.
    for name, folder in (("FINEGRAIN_BROKER_DIR", "broker"), ("MEDIA_ROOT", "media"), ("STATIC_ROOT", "static")):
        if name in os.environ:
            os.environ[name] = os.path.join(data, folder)


if os.environ.get("PYTEST_XDIST_WORKER"):
    isolate(os.environ["PYTEST_XDIST_WORKER"])


# The longest modules first (workers killed mid-task, restarted servers, the production stack, Chromium): a worker
# that takes one early is not left running it alone at the end while the other has nothing to do.
FIRST = ("reliability", "deploy", "browser")


def pytest_collection_modifyitems(items) -> None:
    def rank(item) -> int:
        parts = item.nodeid.split("/")
        return FIRST.index(parts[1]) if len(parts) > 2 and parts[0] == "tests" and parts[1] in FIRST else len(FIRST)

    items.sort(key=rank)  # stable: the order within each group is pytest's
