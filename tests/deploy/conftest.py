"""Helpers for the deploy tests: run manage.py in a fresh process with exactly the environment given."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
# A child process gets only these from the test run: anything else (CI's DATABASE_URL, DJANGO_ALLOW_ASYNC_UNSAFE set
# by the browser tests, a developer's LOG_FORMAT) would change what it checks. Tests add the variables they mean.
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")


def clean_env(**variables: str) -> dict[str, str]:
    env = {key: os.environ[key] for key in INHERITED if key in os.environ}
    env.update(variables, DJANGO_SETTINGS_MODULE="config.settings")
    return env


def run_manage(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=clean_env(**env), capture_output=True, text=True,
        timeout=timeout,
    )


@pytest.fixture
def locmem_cache(settings):
    """A private, empty cache: in CI the default cache is Redis, shared with other runs."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "deploy"}}
    from django.core.cache import cache

    cache.clear()
    yield cache
    cache.clear()
