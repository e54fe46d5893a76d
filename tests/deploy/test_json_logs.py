"""LOG_FORMAT=json writes one JSON object a line; the default stays readable text."""

import json
import subprocess
import sys

from .conftest import ROOT, clean_env

SCRIPT = (
    "import django, logging; django.setup(); "
    "logging.getLogger('finegrain.test').warning('import of %s failed', 'data.jsonl', extra={'project': 'alpha'})"
)


def run_with(log_format: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=clean_env(LOG_FORMAT=log_format), capture_output=True, text=True,
        timeout=60,
    )


def test_it_writes_json_objects():
    result = run_with("json")

    assert result.returncode == 0, result.stderr
    record = json.loads(result.stderr.strip().splitlines()[-1])
    assert record["message"] == "import of data.jsonl failed"
    assert record["level"] == "WARNING" and record["logger"] == "finegrain.test"
    assert record["project"] == "alpha" and "time" in record


def test_it_writes_plain_lines_by_default():
    result = run_with("plain")

    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().endswith("WARNING finegrain.test import of data.jsonl failed")


def test_it_refuses_an_unknown_format():
    result = run_with("xml")

    assert result.returncode != 0 and "LOG_FORMAT must be plain or json" in result.stderr
