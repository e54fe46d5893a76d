"""The whole production stack, natively: deploy/smoke/run_native.sh (nginx + TLS, gunicorn, Celery worker and beat
on this machine's PostgreSQL and Redis), which runs its own smoke test through nginx over HTTPS."""

import subprocess

import pytest

from .conftest import DEPLOY


@pytest.mark.services
@pytest.mark.slow
def test_the_native_stack_passes_its_smoke_test():
    result = subprocess.run(
        ["bash", str(DEPLOY / "smoke" / "run_native.sh")], capture_output=True, text=True, timeout=300
    )

    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "all checks passed" in result.stdout
