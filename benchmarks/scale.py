"""The scale benchmark: what a manager waits for, at UniSumEval scale and multiples of it.

    python -m benchmarks.scale generate --scale 1          # benchmarks/out/scale-1x.jsonl
    python -m benchmarks.scale run --scale 1 [--engines sqlite,postgres] [--before REF] [--no-simulate]

Data (`generate`): benchmarks/synthetic.py's generator, 25 x scale documents per domain, 9 summarizers each. 1x is
UniSumEval's size: 225 documents, 2,025 summaries (2 to 6 sentences each), 9 to 15 candidate key-facts per document,
documents of 21 to 10,462 words. 10x: 2,250 documents, 20,250 summaries.

`run`, on each engine, in a fresh database, every step in its own process (its peak RSS is the step's memory):
import; building the HITs of each task with attention checks at 20% (KV; the KV labels of 3 simulated annotators,
so that key-facts settle; FV; KA); with --before REF (default: where this branch left main), the same builds
with that commit's code on a copy of the database taken right after the import, side by side, and whether both
builds made the same HITs, units and checks (HIT ids made deterministic in both); the FV and KA labels of the same
simulated annotators; the full export (annotator labels, assistance, checks, parquet tables, card); the pages a
manager opens, read as a manager with Django's test client (time and response size). One JSON line per step.

PostgreSQL: --pg-url names the database (dropped and re-created); the copy is the same name + "_before".
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
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
    started = time.perf_counter()
    import_dataset(project=project, data=open(args["data"], "rb").read(), filename=os.path.basename(args["data"]))
    from corpus.models import Summary, Document
    out.update(documents=Document.objects.count(), summaries=Summary.objects.count())
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
    from django.test import Client
    from django.urls import reverse
    settings.ALLOWED_HOSTS = ["*"]
    manager, _ = get_user_model().objects.get_or_create(username="scale-manager",
                                                        defaults={"is_staff": True, "is_superuser": True})
    client = Client()
    client.force_login(manager)
    pages = {}
    for name in ("project_detail", "progress", "hit_list", "quality_dashboard", "exports_analytics"):
        url = reverse(name, kwargs={"slug": args["slug"]})
        begun = time.perf_counter()
        response = client.get(url)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        pages[name] = {"status": response.status_code, "seconds": round(time.perf_counter() - begun, 3),
                       "kb": round(len(body) / 1024, 1)}
    out["pages"] = pages
out["seconds"] = round(time.perf_counter() - started, 2)
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


def run(scale: float, engines: list[str], before: str | None, pg_url: str, simulate: bool) -> list[dict]:
    data = generate(scale)
    lines = []

    def emit(line: dict) -> dict:
        line = {"scale": scale, **line}
        print(json.dumps(line), flush=True)
        lines.append(line)
        return line

    with tempfile.TemporaryDirectory(prefix="fg-scale-") as temporary:
        work = Path(temporary)
        if before:
            (work / "before").mkdir()
        old_code = checkout(before, work / "before") if before else None
        for name in engines:
            engine = Engine(name, pg_url, work)
            engine.fresh()
            emit({"engine": name, **child(ROOT, engine.url(), work, "import", slug=SLUG, rate=CHECK_RATE,
                                          data=str(data))})
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
            emit({"engine": name, **child(ROOT, engine.url(), work, "export", slug=SLUG)})
            emit({"engine": name, **child(ROOT, engine.url(), work, "pages", slug=SLUG)})
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["generate", "run"])
    parser.add_argument("--scale", type=float, default=1.0, help="1 = UniSumEval (225 documents), 10 = 2,250")
    parser.add_argument("--engines", default="sqlite,postgres")
    parser.add_argument("--before", default=None,
                        help="git ref whose builds run side by side (default: where this branch left main; '' none)")
    parser.add_argument("--pg-url", default=os.environ.get("SCALE_PG_URL",
                                                           "postgres://postgres@127.0.0.1:5432/finegrain_scale_bench"))
    parser.add_argument("--no-simulate", action="store_true", help="skip the FV and KA labels before the export")
    parser.add_argument("--out", type=Path, help="also write the JSON lines here")
    args = parser.parse_args()
    if args.scale <= 0:
        parser.error("--scale must be positive")
    engines = [name for name in args.engines.split(",") if name]
    if unknown := set(engines) - {"sqlite", "postgres"}:
        parser.error(f"unknown engine(s) {sorted(unknown)}: use sqlite, postgres")
    if args.command == "generate":
        print(generate(args.scale))
        return
    before = args.before
    if before is None:
        before = subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, check=True, capture_output=True,
                                text=True).stdout.strip()
    lines = run(args.scale, engines, before or None, args.pg_url, not args.no_simulate)
    if args.out:
        args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))


if __name__ == "__main__":
    main()
