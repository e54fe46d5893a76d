"""Analytics at UniSumEval scale: agreement report, benchmark export, memory, and alpha vs the krippendorff package.

    python -m benchmarks.analytics_bench build     # fresh PostgreSQL database, import, simulate 3 annotators
    python -m benchmarks.analytics_bench measure   # each measurement in its own process (peak RSS per step)

The analytics page and its CSVs as a manager meets them, on benchmarks/scale.py's data and steps:

    python -m benchmarks.analytics_bench build-scale --engine postgres|sqlite --scale 1|10
    python -m benchmarks.analytics_bench requests --engine postgres|sqlite --scale 1 [--repeat 20] [--old-ref main]

`build-scale` fills PostgreSQL `fg_analytics_scale` (`_10x` at 10x) or a SQLite file in $FG_ANALYTICS_WORK
(/tmp/fg-analytics): import (attention checks at 20%), build KV, simulate KV, build FV, build KA, simulate FV and KA.
`requests`: the first request of the page and of each CSV (which with this code only queue the analytics job and say
so), the job's time, then --repeat requests of each (p50, p99); then the same with --old-ref's code, side by side.

The database is `finegrain_analytics_bench` on 127.0.0.1:5432 (dropped and re-created by `build`). The corpus is
benchmarks/synthetic.py's file (225 documents, 2,025 summaries); labels come from `simulate_annotations`
(3 simulated annotators, accuracy 0.9, seed 1), which builds HITs with the real service and writes answers with
bulk inserts. The project has attention_check_rate=0 (see `build`). Every measurement prints one JSON line.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "out" / "unisumeval-scale.jsonl"
PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
PG_BENCH = "postgres://postgres@127.0.0.1:5432/finegrain_analytics_bench"
SLUG = "bench"


def _setup():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def build() -> dict:
    _setup()
    from django.core.management import call_command

    from annotation.models import Label
    from corpus.importing import import_dataset
    from corpus.models import Project
    from exports.simulate import simulate_annotations

    call_command("migrate", verbosity=0)
    # No attention checks: the injection service (annotation/quality, still in progress) takes ~0.8 s per KA HIT at
    # this scale (measured 2026-11-21), ~30 minutes for 2,025 KA HITs. The counted-label query keeps its joins to
    # the (then empty) check and grade tables.
    project = Project.objects.create(slug=SLUG, name="UniSumEval scale", attention_check_rate=0.0)
    started = time.perf_counter()
    import_dataset(project=project, data=DATA.read_bytes(), filename=DATA.name)
    imported = time.perf_counter() - started
    started = time.perf_counter()
    result = simulate_annotations(project=project, annotators=3, accuracy=0.9, seed=1)
    return {"step": "build", "import_seconds": round(imported, 1),
            "simulate_seconds": round(time.perf_counter() - started, 1), "labels": Label.objects.count(),
            "assignments": result.assignments, "graded": result.grades, "hits": result.hits_by_task}


def agreement() -> dict:
    _setup()
    from corpus.models import Project
    from exports.report import agreement_report
    from exports.selectors import counted_labels

    project = Project.objects.get(slug=SLUG)
    started = time.perf_counter()
    report = agreement_report(project)
    seconds = time.perf_counter() - started
    overall = {row.task: round(row.primary.value, 3) for row in report.rows if row.breakdown == "overall"}
    return {"step": "agreement_report", "seconds": round(seconds, 2), "rows": len(report.rows),
            "n_boot": report.n_boot, "counted_labels": counted_labels(project).count(), "overall": overall,
            "peak_rss_mb": _peak_mb()}


def export(options: str) -> dict:
    _setup()
    from corpus.models import Project
    from exports.export import ExportOptions, export_benchmark

    project = Project.objects.get(slug=SLUG)
    chosen = {"plain": ExportOptions(),
              "full": ExportOptions(annotator_labels=True, assistance=True, checks=True, tables="parquet",
                                    card=True)}[options]
    out = Path(tempfile.mkdtemp()) / "bench.jsonl"
    started = time.perf_counter()
    result = export_benchmark(project=project, out=out, options=chosen)
    seconds = time.perf_counter() - started
    return {"step": f"export_{options}", "seconds": round(seconds, 2), "rows": result.rows,
            "files": {path.name: path.stat().st_size for path in result.files}, "peak_rss_mb": _peak_mb()}


def versus_krippendorff() -> dict:
    """Alpha from the selector's arrays: exports.agreement vs krippendorff.alpha on the same arrays (no bootstrap)."""
    _setup()
    import krippendorff
    import numpy as np

    from corpus.models import Project
    from exports.agreement import krippendorff_alpha
    from exports.selectors import label_source, task_ratings

    project = Project.objects.get(slug=SLUG)
    source = label_source(project)
    results = {}
    for task in ("fv", "kv", "ka"):
        started = time.perf_counter()
        ratings = task_ratings(project, task, source)
        read = time.perf_counter() - started
        ours, theirs = [], []
        for _ in range(5):
            started = time.perf_counter()
            value = krippendorff_alpha(ratings.ratings)
            ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            reference = krippendorff.alpha(reliability_data=ratings.ratings.T, level_of_measurement="nominal")
            theirs.append(time.perf_counter() - started)
        assert np.isclose(value, reference), (value, reference)
        results[task] = {"units": len(ratings.unit_ids), "read_seconds": round(read, 3),
                         "ours_seconds": round(min(ours), 4), "krippendorff_seconds": round(min(theirs), 4),
                         "ratio": round(min(ours) / min(theirs), 2), "alpha": round(value, 4)}
    return {"step": "alpha_vs_krippendorff", "tasks": results}


def _child(*args: str) -> None:
    env = dict(os.environ, DATABASE_URL=PG_BENCH)
    env.pop("CELERY_BROKER_URL", None)
    started = time.perf_counter()
    output = subprocess.run([sys.executable, "-m", "benchmarks.analytics_bench", "--child", *args], env=env,
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    line = json.loads(output.strip().splitlines()[-1])
    line["process_seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(line), flush=True)


SCALE_WORK = Path(os.environ.get("FG_ANALYTICS_WORK", "/tmp/fg-analytics"))


def scale_database(engine: str, scale: float) -> str:
    """The database `build-scale` fills: PostgreSQL `fg_analytics_scale[_10x]` or a SQLite file in SCALE_WORK."""
    suffix = "" if scale == 1 else f"_{scale:g}x"
    if engine == "sqlite":
        return f"sqlite:///{SCALE_WORK / f'scale{suffix}.sqlite3'}"
    return f"postgres://postgres@127.0.0.1:5432/fg_analytics_scale{suffix}"


def build_scale(engine_name: str, scale: float) -> None:
    """benchmarks/scale.py's child steps, kept: import, build KV, simulate KV, build FV, build KA, simulate FV+KA."""
    from benchmarks import scale as harness

    data = harness.generate(scale)
    SCALE_WORK.mkdir(parents=True, exist_ok=True)
    url = scale_database(engine_name, scale)
    engine = harness.Engine(engine_name, url, SCALE_WORK)
    if engine_name == "sqlite":
        Path(url.removeprefix("sqlite:///")).unlink(missing_ok=True)
    else:
        engine._pg(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
        engine._pg(f'CREATE DATABASE "{url.rsplit("/", 1)[1]}"')
    steps = [("import", {"rate": harness.CHECK_RATE, "data": str(data)}), ("build", {"task": "kv"}),
             ("simulate", {"tasks": ["kv"]}), ("build", {"task": "fv"}), ("build", {"task": "ka"}),
             ("simulate", {"tasks": ["fv", "ka"]})]
    for step, args in steps:
        line = harness.child(ROOT, url, SCALE_WORK, step, slug=harness.SLUG, **args)
        print(json.dumps({"engine": engine_name, "scale": scale, **line}), flush=True)


# Runs in a child process with either this tree's code or main's (`git archive`): it imports nothing from benchmarks/.
# Every request goes through Django's test client as a superuser (middleware, templates and all), one at a time.
REQUESTS = r'''
import json, os, statistics, sys, time
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
settings.ALLOWED_HOSTS = ["*"]
args = json.loads(sys.argv[1])
user, _ = get_user_model().objects.get_or_create(username="bench-manager",
                                                 defaults={"is_staff": True, "is_superuser": True})
client = Client()
client.force_login(user)
new = args["code"] == "new"
if new:
    from corpus.models import Job, Snapshot
    from corpus.snapshots import numbers_run
    from exports.figures import KIND
    Snapshot.objects.filter(kind=KIND).delete()
    Job.objects.filter(kind=KIND).delete()

def url(target):
    if target == "page":
        return reverse("exports_analytics", args=[args["slug"]])
    query = "?dimension=faithfulness" if target == "scores" else ""
    return reverse("exports_table_csv", args=[args["slug"], target]) + query

def get(target):
    begun = time.perf_counter()
    response = client.get(url(target))
    body = response.content
    return response.status_code, time.perf_counter() - begun, body

out = {"code": args["code"], "targets": {}}
# One request to the project page first: Django's first request imports the views and compiles templates, which
# is the process's cost, not the page's.
begun = time.perf_counter()
client.get(reverse("project_detail", args=[args["slug"]]))
out["warm_up_seconds"] = round(time.perf_counter() - begun, 3)
for target in args["targets"]:
    status, seconds, body = get(target)
    out["targets"][target] = {"first_seconds": round(seconds, 3), "first_status": status,
                              "first_kb": round(len(body) / 1024, 1),
                              "first_says_computing": status in (409, 503) or b"Not computed yet" in body}
if new:
    # The page's button, then the job's work in this process (a worker's).
    client.post(reverse("numbers_update", args=[args["slug"], KIND]))
    job = Job.objects.filter(kind=KIND).latest("pk")
    begun = time.perf_counter()
    numbers_run(job_id=job.pk)
    out["job_seconds"] = round(time.perf_counter() - begun, 2)
    job.refresh_from_db()
    out["job_status"] = job.status
    out["figures_kb"] = round(len(json.dumps(Snapshot.objects.get(kind=KIND, variant="").data)) / 1024, 1)
for target in args["targets"]:
    times = []
    for _ in range(args["repeat"]):
        status, seconds, body = get(target)
        times.append(seconds)
    times.sort()
    out["targets"][target].update(status=status, kb=round(len(body) / 1024, 1), n=len(times),
                                  p50=round(statistics.median(times), 3) if times else None,
                                  p99=round(times[round(0.99 * (len(times) - 1))], 3) if times else None)
print(json.dumps(out))
'''
CSV_TABLES = ("agreement", "summarizers", "scores", "error-types", "corrections", "progress", "evaluators", "detection",
              "detection-combinations")


def requests(engine: str, scale: float, repeat: int, old_ref: str, old: bool, old_repeat: int) -> None:
    """The page and each CSV: first request, the job's time (new code), then `repeat` requests (p50, p99); with main's
    code (`old_ref`, exported with git archive) side by side on the same database: its first page view is cold (a
    fresh process), its CSVs follow the page in the same process and so share its cache."""
    url = scale_database(engine, scale)
    targets = ["page", *CSV_TABLES]
    codes = [("new", ROOT)]
    if old:
        into = Path(tempfile.mkdtemp(prefix="fg-analytics-old-"))
        archive = subprocess.run(["git", "archive", old_ref], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
        codes.append(("old", into))
    env = dict(os.environ, DATABASE_URL=url, FINEGRAIN_DATA_DIR=str(SCALE_WORK), PYTHONDONTWRITEBYTECODE="1")
    env.pop("CELERY_BROKER_URL", None)
    for name, code in codes:
        done = subprocess.run([sys.executable, "-c", REQUESTS, json.dumps(
            {"code": name, "slug": "scale", "targets": targets, "repeat": repeat if name == "new" else old_repeat})],
            env=dict(env, PYTHONPATH=str(code)), cwd=code, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(done.stderr[-3000:])
        line = json.loads(done.stdout.strip().splitlines()[-1])
        print(json.dumps({"engine": engine, "scale": scale, **line}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="Analytics benchmark at UniSumEval scale (PostgreSQL)")
    parser.add_argument("action", choices=["build", "measure", "agreement", "export_plain", "export_full",
                                           "versus", "build-scale", "requests"])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--old-ref", default="main", help="the code to compare with (requests)")
    parser.add_argument("--old-repeat", type=int, default=5, help="requests: repeats with the old code (seconds each)")
    parser.add_argument("--no-old", action="store_true", help="requests: this tree's code only")
    parser.add_argument("--engine", default="postgres", choices=["postgres", "sqlite"])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        steps = {"build": build, "agreement": agreement, "export_plain": lambda: export("plain"),
                 "export_full": lambda: export("full"), "versus": versus_krippendorff}
        print(json.dumps(steps[args.action]()))
        return
    if args.action == "build-scale":
        build_scale(args.engine, args.scale)
        return
    if args.action == "requests":
        requests(args.engine, args.scale, args.repeat, args.old_ref, not args.no_old, args.old_repeat)
        return
    if args.action == "build":
        import psycopg

        if not DATA.exists():
            from benchmarks.synthetic import write

            write(DATA)
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS finegrain_analytics_bench")
            conn.execute("CREATE DATABASE finegrain_analytics_bench")
        _child("build")
        return
    for step in (["agreement", "export_plain", "export_full", "versus"] if args.action == "measure"
                 else [args.action]):
        _child(step)


if __name__ == "__main__":
    main()
