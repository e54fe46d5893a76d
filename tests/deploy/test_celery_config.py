"""The Redis transport's visibility_timeout comes from CELERY_VISIBILITY_TIMEOUT and reaches the Celery app and the
broker connection its workers open; the default outlasts the longest task (deploy/OPERATIONS.md)."""

import json
import math
import subprocess
import sys

from assist.llm.base import RetryPolicy

from .conftest import ROOT, clean_env

SCRIPT = (
    "import json, django; django.setup(); "
    "from config.celery_app import app; "
    "connection = app.connection_for_read(); "
    "print(json.dumps({'conf': app.conf.broker_transport_options, "
    "'connection': connection.transport_options, 'transport': connection.transport_cls}))"
)


def celery_config(**variables: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env=clean_env(CELERY_BROKER_URL="redis://127.0.0.1:6379/0", **variables),
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_it_sets_the_visibility_timeout_from_the_environment():
    config = celery_config(CELERY_VISIBILITY_TIMEOUT="7200")

    assert config["transport"] == "redis"
    assert config["conf"] == {"visibility_timeout": 7200}
    # What kombu's Redis channel reads when a worker connects (no connection is made here).
    assert config["connection"]["visibility_timeout"] == 7200


def test_the_default_outlasts_the_longest_task():
    config = celery_config()
    timeout = config["connection"]["visibility_timeout"]

    assert timeout == 6 * 3600
    # One assist document at worst, with the default LLM settings (FINEGRAIN_LLM_TIMEOUT 60 s, 3 retries,
    # 4 concurrent calls) and 3 voters: 9 summaries' pre-label calls, 1 key-fact generation, 1 call per voter.
    policy = RetryPolicy()
    call = (policy.max_retries + 1) * 60 + policy.max_retries * policy.max_retry_after
    assist_document = (math.ceil(9 / 4) + 1 + 3) * call
    assert timeout > assist_document > 3600  # kombu's own default (one hour) would redeliver it while it runs
    # A crowd task retried with a countdown waits, unacknowledged, up to 600 s.
    assert timeout > 600
