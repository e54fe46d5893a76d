"""Every app declares its kinds of long work at start-up (corpus.jobs), and declaring them loads no heavy library:
a process that never runs a job (a command, a web worker before its first page) does not pay for the analytics' or
the models' libraries."""

import subprocess
import sys

from corpus.jobs import job_kind, kind_choices

HEAVY = ("scipy", "torch", "pandas", "sentence_transformers", "krippendorff", "sklearn")


def test_every_kind_is_declared_with_its_task():
    codes = {code for code, _ in kind_choices()}
    assert {"import", "hits_build", "topups", "review_tally", "quality", "crowd_publish", "assist", "evaluator",
            "export", "analytics"} <= codes
    for code in codes:
        kind = job_kind(code)
        assert kind.label and kind.task is not None and hasattr(kind.task, "delay"), code
    assert job_kind("assist").part is not None and job_kind("evaluator").part is not None


def test_starting_django_loads_no_heavy_library():
    script = ("import django, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); "
              f"django.setup(); print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == []
