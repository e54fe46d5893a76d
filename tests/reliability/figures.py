"""The reliability tests' figures: each test records them with `record_figures(...)`; at the end of the session they
are written to benchmarks/out/reliability.json (merged by test name) and printed one line per test, so CI logs show
them without `pytest -s`. `benchmarks/reliability_report.py` renders them for benchmarks/RESULTS.md.

A plugin of the whole run (tests/conftest.py), not of tests/reliability/conftest.py: under pytest-xdist the tests run
in worker processes, and only the main process, which never loads that folder's conftest, writes the summary.
"""

import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "out" / "reliability.json"
_FIGURES: dict[str, dict] = {}


@pytest.fixture
def record_figures(request):
    """`record_figures(requests=..., acknowledged=...)`: the test's published numbers (merged, last call wins)."""
    name = request.node.name
    started = time.monotonic()

    def record(**figures):
        entry = _FIGURES.setdefault(name, {})
        entry.update(figures)
        entry["seconds"] = round(time.monotonic() - started, 1)

    yield record
    if name in _FIGURES:
        _FIGURES[name]["seconds"] = round(time.monotonic() - started, 1)
        _FIGURES[name]["outcome"] = "failed" if getattr(request.node, "rep_failed", False) else "passed"
        # Under pytest-xdist the test ran in a worker: the figures reach the summary with the teardown report.
        request.node.user_properties.append(("reliability_figures", {name: _FIGURES[name]}))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        item.rep_failed = True


def pytest_runtest_logreport(report):
    if report.when == "teardown":
        for key, figures in report.user_properties:
            if key == "reliability_figures":
                _FIGURES.update(figures)


def pytest_terminal_summary(terminalreporter):
    if not _FIGURES:
        return
    stored = {}
    if OUT.exists():
        try:
            stored = json.loads(OUT.read_text())
        except ValueError:
            stored = {}
    tests = stored.get("tests", {})
    tests.update(_FIGURES)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}",
        "command": " ".join(["pytest", *terminalreporter.config.invocation_params.args]),
        "load_average": " ".join(f"{load:.1f}" for load in os.getloadavg()),
        "tests": tests,
    }, indent=2, sort_keys=True) + "\n")
    terminalreporter.section("reliability figures")
    for name, figures in _FIGURES.items():
        line = ", ".join(f"{key}={value}" for key, value in figures.items())
        terminalreporter.write_line(f"{name}: {line}")
    terminalreporter.write_line(f"written to {OUT.relative_to(ROOT)}")
