"""The scale benchmark: what a manager waits for, at UniSumEval scale and multiples of it.

    python -m benchmarks.scale generate --scale 1          # benchmarks/out/scale-1x.jsonl
    python -m benchmarks.scale run --scale 1,10 [--engines sqlite,postgres] [--before REF] [--no-simulate]
                                   [--mapping] [--parallel] --out benchmarks/out/scale.jsonl
    python -m benchmarks.scale table benchmarks/out/scale.jsonl     # the RESULTS.md table, scales side by side

Data (`generate`): benchmarks/synthetic.py's generator, 25 x scale documents per domain, 9 summarizers each. 1x is
UniSumEval's size: 225 documents, 2,025 summaries (2 to 6 sentences each), 9 to 15 candidate key-facts per document,
documents of 21 to 10,462 words. 10x: 2,250 documents, 20,250 summaries.

`run`, on each engine, in a fresh database, every step in its own process (its peak RSS is the step's memory):
import (the file handed over open, read by the import a piece at a time; `python -m benchmarks.import_bench --job`
measures the upload's own path, a job's task body); building the HITs of each task with attention checks at 20% (KV;
the KV labels of 3 simulated annotators, so that key-facts settle; FV; KA); with --before REF (default: where this
branch left main), the same builds with that commit's code on a copy of the database taken right after the import,
side by side, and whether both builds made the same HITs, units and checks (HIT ids made deterministic in both); the
FV and KA labels of the same simulated annotators; the agreement report (3 tasks x their breakdowns, 1,000 bootstrap
resamples each); the full export (annotator labels, assistance, checks, parquet tables, card); the analytics page's
figures (its job, run here); the pages a manager opens and the fragments they poll (requested as htmx does), read
as a manager with Django's test client: time and size of a first request, and the SQL queries of it and of a second.
With --mapping, the contextual mapping of every document (the embedding model on the CPU: ~2 minutes per 10,000
sentences on this machine kind) runs after the import.
One JSON line per step. --parallel runs the engines at the same time (each step is one process: two engines keep
the two cores busy), which halves the wall time and adds noise to both.

PostgreSQL: --pg-url names the database (dropped and re-created); the copy is the same name + "_before".
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
SLUG = "scale"
CHECK_RATE = 0.2

# Runs in a child process, with either this tree's code or the --before commit's (so it imports nothing from
# benchmarks/): one step, one JSON line on stdout.
CHILD = r'''
import json, os, random, resource, sys, time, uuid
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
step, args = sys.argv[1], json.loads(sys.argv[2])
from corpus.models import Project
out = {"step": step}

def cpu_seconds():
    """CPU time of this process, of its finished children (the import's splitting workers) and, on PostgreSQL, of
    its database backend, read from /proc (the server runs on this machine): unlike the wall-clock time, it does
    not grow when other work on the machine takes the cores, so that growth from 1x to 10x reads the same in a
    busy window as in a quiet one. Returns (this process's seconds, the backend's seconds, the backend's pid)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    mine, backend, pid = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime, 0.0, None
    from django.db import connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            backend = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
        except OSError:
            pid = None  # a database on another machine: its share is not counted
    return mine, backend, pid

def cpu_since(begun):
    mine, backend, pid = cpu_seconds()
    # A new connection's backend began after the step did: all of its time counts.
    return mine - begun[0] + (backend - begun[1] if pid == begun[2] else backend)

cpu_started = cpu_seconds()
started = time.perf_counter()

def deterministic_ids(seed):
    # HIT ids seed the checks: the same ids in both builds of a before/after pair, so their outputs compare.
    from annotation.models import Hit
    rng = random.Random(seed)
    field = Hit._meta.get_field("public_id")
    field.default = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)
    field.__dict__.pop("_get_default", None)

if step == "import":
    from django.core.management import call_command
    from corpus.importing import import_dataset
    call_command("migrate", verbosity=0)
    project = Project.objects.create(slug=args["slug"], name="Scale benchmark",
                                     attention_check_rate=args["rate"])
    started, cpu_started = time.perf_counter(), cpu_seconds()
    from corpus import importing
    with open(args["data"], "rb") as file:
        # This tree's import reads the open file a piece at a time; an older commit's (--before) takes the bytes.
        import_dataset(project=project, data=file if hasattr(importing, "FileLines") else file.read(),
                       filename=os.path.basename(args["data"]))
    from corpus.models import Summary, Document
    out.update(documents=Document.objects.count(), summaries=Summary.objects.count())
elif step == "mapping":
    from assist.pipeline import assist_document
    from corpus.models import Document
    documents = 0
    for document in Document.objects.filter(project__slug=args["slug"]).order_by("pk").iterator():
        assist_document(document, steps=("mapping",))
        documents += 1
    out.update(documents=documents)
elif step == "agreement":
    from exports.report import agreement_report
    report = agreement_report(Project.objects.get(slug=args["slug"]), include_simulated=True)
    out.update(rows=len(report.rows))
elif step == "analytics":
    # The analytics page's figures, computed as its job does (the page then reads them: the "pages" step).
    from corpus.models import Job
    from corpus.snapshots import numbers_run, numbers_update
    from exports.job_kinds import ANALYTICS
    project = Project.objects.get(slug=args["slug"])
    for variant in ("", "simulated"):
        job = numbers_update(project, ANALYTICS, variant)
        numbers_run(job_id=job.pk)
        job.refresh_from_db()
        assert job.status == Job.Status.DONE, job.error
    out.update(jobs=2)
elif step == "build":
    from annotation.services.hits import build_hits
    deterministic_ids(f"scale-{args['task']}")
    result = build_hits(Project.objects.get(slug=args["slug"]), args["task"])
    out.update(task=args["task"], hits=result.hits_created, units=result.units_created)
elif step == "simulate":
    import numpy as np
    from exports.simulate import _refresh_statistics, _simulate_task, simulated_annotators, SimulationResult
    from django.db import transaction
    project = Project.objects.get(slug=args["slug"])
    people = simulated_annotators(project, 3)
    result = SimulationResult(annotators=[])
    for task in args["tasks"]:
        with transaction.atomic():
            _simulate_task(project, task, people, 0.9, np.random.default_rng({"kv": 1, "fv": 2, "ka": 3}[task]), result)
    _refresh_statistics()
    out.update(tasks=args["tasks"], labels=result.labels, assignments=result.assignments)
elif step == "layout":
    import hashlib
    from annotation.models import Hit, Unit
    digest = hashlib.sha256()
    rows = 0
    units = (Unit.objects.filter(hit__project__slug=args["slug"], hit__task=args["task"])
             .order_by("hit__position", "position")
             .values_list("hit__position", "hit__public_id", "position", "row", "column", "text", "sentence_text",
                          "highlighted", "ai_category", "ai_reason", "ai_source", "attention_check__kind",
                          "attention_check__expected", "attention_check__origin_document__uid",
                          "attention_check__note"))
    for row in units.iterator(chunk_size=5000):
        digest.update(json.dumps(row, default=str, sort_keys=True).encode())
        rows += 1
    out.update(task=args["task"], units=rows, sha256=digest.hexdigest()[:16])
elif step == "export":
    import tempfile
    from exports.export import ExportOptions, export_benchmark
    options = ExportOptions(annotator_labels=True, assistance=True, checks=True, tables="parquet", card=True)
    result = export_benchmark(project=Project.objects.get(slug=args["slug"]),
                              out=os.path.join(tempfile.mkdtemp(), "bench.jsonl"), options=options)
    out.update(rows=result.rows, bytes=sum(os.path.getsize(path) for path in result.files))
elif step == "pages":
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse
    from corpus.models import Job
    settings.ALLOWED_HOSTS = ["*"]
    manager, _ = get_user_model().objects.get_or_create(username="scale-manager",
                                                        defaults={"is_staff": True, "is_superuser": True})
    client = Client()
    client.force_login(manager)
    project = Project.objects.get(slug=args["slug"])
    slug = {"slug": args["slug"]}
    # The pages, then the fragments they poll (templates: hx-trigger="every ..."), requested as htmx requests them;
    # only those of the views this code has (stored numbers were followed by three views, then by numbers_status).
    from django.urls import NoReverseMatch
    def url_of(name, query="", **kwargs):
        try:
            return reverse(name, kwargs={**slug, **kwargs}) + query
        except NoReverseMatch:
            return None
    urls = [(name, url_of(name), False) for name in (
        "project_detail", "progress", "hit_list", "quality_dashboard", "exports_analytics", "crowd_manage")]
    urls += [(name, url_of(name, query), True) for name, query in (
        ("progress", ""), ("review_status", "?listed=1"), ("exports_analytics_status", ""),
        ("project_detail", "?part=assist"))]
    if url_of("quality_numbers_status"):
        from annotation.quality.numbers import quality_numbers
        computed = quality_numbers(project).computed
        urls.append(("quality_numbers_status",
                     url_of("quality_numbers_status", f"?shown={computed.isoformat() if computed else ''}"), True))
    if url_of("numbers_status", kind="quality"):
        from corpus.snapshots import numbers_state
        for code in ("review_tally", "quality", "analytics"):
            computed = numbers_state(project, code).computed
            urls.append((f"numbers_status {code}", url_of("numbers_status", "?variant=&shown=" + (
                computed.isoformat().replace("+", "%2B") if computed else ""), kind=code), True))
    job = Job.objects.filter(project=project).order_by("-pk").first()
    if job is not None:
        urls.append(("job_status", url_of("job_status", pk=job.pk), True))
    urls = [(name, url, polled) for name, url, polled in urls if url is not None]
    pages = {}
    for name, url, polled in urls:
        headers = {"HX-Request": "true"} if polled else {}
        counts = []
        for _ in range(2):  # the first request timed; the queries of both (the first may queue a job)
            with CaptureQueriesContext(connection) as captured:
                begun = time.perf_counter()
                response = client.get(url, headers=headers)
                body = b"".join(response.streaming_content) if response.streaming else response.content
                seconds = time.perf_counter() - begun
            counts.append(len(captured.captured_queries))
            if len(counts) == 1:
                first = {"status": response.status_code, "seconds": round(seconds, 3), "kb": round(len(body) / 1024, 1)}
        pages[name + (" (polled)" if polled else "")] = {**first, "queries": counts}
    out["pages"] = pages
out["seconds"] = round(time.perf_counter() - started, 2)
out["cpu_seconds"] = round(cpu_since(cpu_started), 2)
out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
print(json.dumps(out))
'''


def generate(scale: float) -> Path:
    from benchmarks.synthetic import write

    path = OUT / f"scale-{scale:g}x.jsonl"
    if not path.exists():
        write(path, seed=7, scale=scale)
    return path


class Engine:
    """A database for the run and a copy of it for the --before builds."""

    def __init__(self, name: str, pg_url: str, work: Path):
        self.name, self.pg_url, self.work = name, pg_url, work

    def url(self, copy: bool = False) -> str:
        if self.name == "sqlite":
            return f"sqlite:///{self.work / ('before.sqlite3' if copy else 'after.sqlite3')}"
        return self.pg_url + ("_before" if copy else "")

    def _pg(self, sql: str) -> None:
        import psycopg

        admin = self.pg_url.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(admin.replace("postgres://", "postgresql://"), autocommit=True) as connection:
            connection.execute(sql)

    def fresh(self) -> None:
        if self.name == "sqlite":
            for path in self.work.glob("*.sqlite3*"):
                path.unlink()
            return
        database = self.pg_url.rsplit("/", 1)[1]
        for name in (database, database + "_before"):
            self._pg(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._pg(f'CREATE DATABASE "{database}"')

    def copy(self) -> None:
        if self.name == "sqlite":
            import sqlite3

            source = sqlite3.connect(self.work / "after.sqlite3")
            target = sqlite3.connect(self.work / "before.sqlite3")
            source.backup(target)
            source.close()
            target.close()
            return
        database = self.pg_url.rsplit("/", 1)[1]
        self._pg(f'CREATE DATABASE "{database}_before" TEMPLATE "{database}"')


def child(code_dir: Path, database_url: str, data_dir: Path, step: str, **args) -> dict:
    env = dict(os.environ, DATABASE_URL=database_url, FINEGRAIN_DATA_DIR=str(data_dir), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=str(code_dir))
    if "data" in args:  # The 10x file (363 MB) is over the upload limit older commits kept (200 MiB).
        env["FINEGRAIN_MAX_UPLOAD_BYTES"] = str(max(Path(args["data"]).stat().st_size, 200 * 1024 * 1024))
    env.pop("CELERY_BROKER_URL", None)
    env.pop("FINEGRAIN_REQUIRE_SERVICES", None)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, step, json.dumps(args)], env=env, cwd=code_dir,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{step} {args} failed:\n{done.stderr[-3000:]}")
    line = json.loads(done.stdout.strip().splitlines()[-1])
    line["process_seconds"] = round(time.perf_counter() - started, 1)
    return line


def checkout(ref: str, into: Path) -> Path:
    """The code of `ref`, exported read-only from git (the repository's own worktrees are left alone)."""
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def run(scales: list[float], engines: list[str], before: str | None, pg_url: str, *, simulate: bool,
        mapping: bool, parallel: bool, out: Path | None) -> list[dict]:
    lines = []
    lock = threading.Lock()

    def emit(line: dict) -> dict:
        with lock:
            print(json.dumps(line), flush=True)
            lines.append(line)
            if out:
                with out.open("a") as file:
                    file.write(json.dumps(line) + "\n")
        return line

    with tempfile.TemporaryDirectory(prefix="fg-scale-") as temporary:
        work = Path(temporary)
        old_code = None
        if before:
            (work / "before").mkdir()
            old_code = checkout(before, work / "before")

        def one_engine(name: str) -> None:
            (work / name).mkdir()
            for scale in scales:
                run_engine(Engine(name, pg_url, work / name), scale, generate(scale), old_code, simulate=simulate,
                           mapping=mapping, emit=lambda line, scale=scale: emit({"scale": scale, **line}))

        if parallel:
            with ThreadPoolExecutor(len(engines)) as pool:
                list(pool.map(one_engine, engines))
        else:
            for name in engines:
                one_engine(name)
    return lines


def run_engine(engine: Engine, scale: float, data: Path, old_code: Path | None, *, simulate: bool, mapping: bool,
               emit) -> None:
    name, work = engine.name, engine.work
    engine.fresh()
    emit({"engine": name, **child(ROOT, engine.url(), work, "import", slug=SLUG, rate=CHECK_RATE, data=str(data))})
    if mapping:
        emit({"engine": name, **child(ROOT, engine.url(), work, "mapping", slug=SLUG)})
    if old_code:
        engine.copy()
    for task in ("kv", "fv", "ka"):
        after = emit({"engine": name, "code": "after", **child(ROOT, engine.url(), work, "build", slug=SLUG,
                                                                task=task)})
        if old_code:
            old = emit({"engine": name, "code": "before", **child(
                old_code, engine.url(copy=True), work, "build", slug=SLUG, task=task)})
            same = [child(ROOT, url, work, "layout", slug=SLUG, task=task)
                    for url in (engine.url(), engine.url(copy=True))]
            emit({"engine": name, "step": "compare", "task": task,
                  "ratio_before_after": round(old["seconds"] / max(after["seconds"], 1e-9), 1),
                  "same_layout": same[0]["sha256"] == same[1]["sha256"], "units": same[0]["units"]})
        if task == "kv":  # Key-facts settle on KV labels; KA HITs exist only then.
            for url in [engine.url()] + ([engine.url(copy=True)] if old_code else []):
                line = child(ROOT, url, work, "simulate", slug=SLUG, tasks=["kv"])
            emit({"engine": name, **line})
    if simulate:
        emit({"engine": name, **child(ROOT, engine.url(), work, "simulate", slug=SLUG, tasks=["fv", "ka"])})
        emit({"engine": name, **child(ROOT, engine.url(), work, "agreement", slug=SLUG)})
    emit({"engine": name, **child(ROOT, engine.url(), work, "export", slug=SLUG)})
    emit({"engine": name, **child(ROOT, engine.url(), work, "analytics", slug=SLUG)})
    emit({"engine": name, **child(ROOT, engine.url(), work, "pages", slug=SLUG)})


STEP_NAMES = {"import": "import", "mapping": "contextual mapping", "build": "build {task} HITs with checks",
              "simulate": "{tasks} labels, 3 simulated annotators", "agreement": "agreement report",
              "export": "full export", "analytics": "analytics figures (the page's job, with and without "
              "simulated labels)"}
PAGE_NAMES = {"project_detail": "project page", "progress": "progress page", "hit_list": "HIT list",
              "quality_dashboard": "quality dashboard", "exports_analytics": "analytics page",
              "crowd_manage": "crowd manager page", "progress (polled)": "progress fragment (polled)",
              "review_status (polled)": "review tally state (polled)",
              "exports_analytics_status (polled)": "analytics figures state (polled)",
              "project_detail (polled)": "assist card (polled)", "job_status (polled)": "latest job (polled)",
              "quality_numbers_status (polled)": "quality numbers state (polled)",
              "numbers_status review_tally (polled)": "review list's stored numbers (polled)",
              "numbers_status quality (polled)": "quality numbers' stored numbers (polled)",
              "numbers_status analytics (polled)": "analytics figures' stored numbers (polled)"}


def table(paths: list[Path]) -> str:
    """The RESULTS.md table: one row per step, the scales side by side for each engine, and the growth from the
    smallest scale to the largest (time ratio, and CPU-time ratio where measured; linear growth at 10x reads ~10)."""
    lines = [json.loads(line) for path in paths for line in path.read_text().splitlines() if line.strip()]
    lines = [line for line in lines if line.get("code", "after") == "after" and line["step"] != "compare"]
    scales = sorted({line["scale"] for line in lines})
    engines = [engine for engine in ("sqlite", "postgres") if any(line["engine"] == engine for line in lines)]
    cells: dict[tuple[str, str, float], str] = {}
    seconds: dict[tuple[str, str, float], float] = {}
    cpu: dict[tuple[str, str, float], float] = {}
    order: list[str] = []

    def put(row: str, engine: str, scale: float, value: float, extra: str, cpu_seconds: float | None = None) -> None:
        if row not in order:
            order.append(row)
        cpu_cell = "" if cpu_seconds is None else f" (CPU {cpu_seconds:,.2f} s)"
        cells[(row, engine, scale)] = f"{value:,.2f} s{cpu_cell}{extra}"
        seconds[(row, engine, scale)] = value
        if cpu_seconds is not None:
            cpu[(row, engine, scale)] = cpu_seconds

    for line in lines:
        if line["step"] == "pages":
            for page, figures in line["pages"].items():
                queries = figures.get("queries")
                put(PAGE_NAMES.get(page, page), line["engine"], line["scale"], figures["seconds"],
                    f", {figures['kb']:,.0f} KB" + (f", {'/'.join(map(str, queries))} queries" if queries else ""))
            continue
        row = STEP_NAMES.get(line["step"], line["step"]).format(
            task=line.get("task", "").upper(), tasks="+".join(line.get("tasks", [])).upper())
        put(row, line["engine"], line["scale"], line["seconds"], f", {line['peak_rss_mb']:,.0f} MB",
            line.get("cpu_seconds"))
    label = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
    header = ["step"] + [f"{label[engine]} {scale:g}x" for engine in engines for scale in scales]
    # Growth in CPU time too, where it was measured: it does not depend on what else ran on the machine.
    growths = [("", seconds)] + ([(" (CPU)", cpu)] if cpu else [])
    if len(scales) > 1:
        header += [f"{label[engine]} {scales[-1] / scales[0]:g}x growth{kind}" for kind, _ in growths
                   for engine in engines]
    out = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in order:
        values = [cells.get((row, engine, scale), "") for engine in engines for scale in scales]
        if len(scales) > 1:
            for _, measured in growths:
                for engine in engines:
                    low, high = measured.get((row, engine, scales[0])), measured.get((row, engine, scales[-1]))
                    values.append(f"{high / low:.1f}" if low and high else "")
        out.append("| " + " | ".join([row, *values]) + " |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["generate", "run", "table"])
    parser.add_argument("files", nargs="*", type=Path, help="table: the JSON lines of runs")
    parser.add_argument("--scale", default="1", help="1 = UniSumEval (225 documents), 10 = 2,250; several: 1,10")
    parser.add_argument("--engines", default="sqlite,postgres")
    parser.add_argument("--before", default=None,
                        help="git ref whose builds run side by side (default: where this branch left main; '' none)")
    parser.add_argument("--pg-url", default=os.environ.get("SCALE_PG_URL",
                                                           "postgres://postgres@127.0.0.1:5432/finegrain_scale_bench"))
    parser.add_argument("--no-simulate", action="store_true", help="skip the FV and KA labels before the export")
    parser.add_argument("--mapping", action="store_true", help="run the contextual mapping after the import")
    parser.add_argument("--parallel", action="store_true", help="run the engines at the same time")
    parser.add_argument("--out", type=Path, help="also append the JSON lines here")
    args = parser.parse_args()
    if args.command == "table":
        if not args.files:
            parser.error("table needs the JSON lines files of runs")
        print(table(args.files))
        return
    try:
        scales = [float(scale) for scale in args.scale.split(",")]
    except ValueError:
        parser.error(f"--scale takes numbers separated by commas, not {args.scale!r}")
    if not scales or any(scale <= 0 for scale in scales):
        parser.error("--scale must be positive")
    engines = [name for name in args.engines.split(",") if name]
    if unknown := set(engines) - {"sqlite", "postgres"}:
        parser.error(f"unknown engine(s) {sorted(unknown)}: use sqlite, postgres")
    if args.command == "generate":
        for scale in scales:
            print(generate(scale))
        return
    before = args.before
    if before is None:
        before = subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, check=True, capture_output=True,
                                text=True).stdout.strip()
    run(scales, engines, before or None, args.pg_url, simulate=not args.no_simulate, mapping=args.mapping,
        parallel=args.parallel, out=args.out)


if __name__ == "__main__":
    main()
