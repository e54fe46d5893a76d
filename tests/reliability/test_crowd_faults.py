"""Crowd work through service restarts: PostgreSQL restarted in the middle of a crowd sync, Redis restarted while
the outbox's decisions are queued (tests/reliability/scenarios/crowd_faults.py), and Redis restarted while a real
Celery worker publishes HITs on MTurk (scenarios/crowd_publishing.py). Each scenario file runs in a pytest subprocess
whose database is a throwaway PostgreSQL cluster this test starts (the shared one is never touched) and whose broker
is a private redis-server the scenario starts and restarts."""

import json
import os
import subprocess
import sys

import pytest

from .conftest import ROOT, free_port

pytestmark = pytest.mark.services


def run_scenario(scenario: str, private_postgres, tmp_path) -> tuple[subprocess.CompletedProcess, dict]:
    """Run tests/reliability/scenarios/<scenario> in a pytest subprocess; returns it and the figures it saved."""
    figures = tmp_path / "figures.json"
    redis_port = free_port()  # the scenario starts (and restarts) its private redis-server on this port
    env = dict(os.environ, DATABASE_URL=private_postgres.url, REL_REDIS_PORT=str(redis_port),
               CELERY_BROKER_URL=f"redis://127.0.0.1:{redis_port}/0", CACHE_URL="", REL_PG_DIR=str(private_postgres.dir),
               REL_PG_PORT=str(private_postgres.port), REL_FIGURES=str(figures))
    env.pop("FINEGRAIN_REQUIRE_SERVICES", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", f"tests/reliability/scenarios/{scenario}", "-p", "no:cacheprovider",
         "-q", "--no-header", "-x"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    return run, json.loads(figures.read_text()) if figures.exists() else {}


def test_publishing_through_a_worker_creates_every_hit_once_across_redis_restarts(private_postgres, tmp_path,
                                                                                  record_figures):
    run, results = run_scenario("crowd_publishing.py", private_postgres, tmp_path)
    record_figures(**results.get("redis_restart_while_publishing", {}))
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert set(results) == {"redis_restart_while_publishing"}


def test_crowd_sync_and_outbox_survive_postgres_and_redis_restarts(private_postgres, tmp_path, record_figures):
    run, results = run_scenario("crowd_faults.py", private_postgres, tmp_path)
    for name, values in results.items():
        record_figures(**{f"{name}.{key}": value for key, value in values.items()})
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert set(results) == {"postgres_restart_mid_sync", "redis_restart_with_outbox_queued"}
