"""Import benchmark: a dataset file into a fresh database, then the same file again (nothing changes).

    python -m benchmarks.import_bench [--engine sqlite|postgres] [--data FILE] [--before REF] [--repeat N]

Default data: benchmarks/out/scale-1x.jsonl (`python -m benchmarks.scale generate --scale 1`: 225 documents,
2,025 summaries, 36.5 MB). With --before, the import of that commit's code (`git archive`) runs in turn with this
tree's, N times each (ABAB...), so that a shared machine's load falls on both alike; both must store the same
sentences and key-facts (a digest of every stored row is compared). Each import runs in its own process; the time
is `import_dataset` alone (Django's start and the migrations are not in it). Each run also prints when the steps of
the first import end (the file read and checked, the last text split, the write) and its CPU time, in the importing
process and in its splitting workers.

PostgreSQL: a scratch database `finegrain_bench` on 127.0.0.1:5432 is dropped and re-created for every import.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.scale import OUT, ROOT, checkout, generate

PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
PG_BENCH = "postgres://postgres@127.0.0.1:5432/finegrain_bench"

# Runs in a child process with either tree's code: imports the file twice, prints one JSON line.
CHILD = r'''
import hashlib, json, os, sys, time
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
import resource
from django.core.management import call_command
from corpus import importing
from corpus.importing import import_dataset
from corpus.models import DocumentSentence, KeyFact, Project, SummarySentence
call_command("migrate", verbosity=0)
project = Project.objects.create(slug="bench", name="bench")
path = sys.argv[1]
data = open(path, "rb").read()
# When each step of the first import ends, from its start: the file read and checked, the last text split, the
# write. Both codes have these three functions.
ends = {}
def timed(name, function):
    def step(*args, **kwargs):
        result = function(*args, **kwargs)
        ends.setdefault(name, round(time.perf_counter() - started, 3))
        return result
    return step
importing.parse = timed("read_and_checked", importing.parse)
importing.segment_new = timed("split", importing.segment_new)
importing.write_documents = timed("written", importing.write_documents)
cpu = time.process_time()
started = time.perf_counter()
first = import_dataset(project=project, data=data, filename=os.path.basename(path))
seconds = time.perf_counter() - started
cpu = round(time.process_time() - cpu, 2)
children = resource.getrusage(resource.RUSAGE_CHILDREN)
workers_cpu = round(children.ru_utime + children.ru_stime, 2)
started = time.perf_counter()
again = import_dataset(project=project, data=data, filename=os.path.basename(path))
again_seconds = time.perf_counter() - started
digest = hashlib.sha256()
for rows in (DocumentSentence.objects.order_by("document__uid", "index").values_list(
                 "document__uid", "index", "text", "turn", "speaker"),
             SummarySentence.objects.order_by("summary__document__uid", "summary__model", "index").values_list(
                 "summary__document__uid", "summary__model", "index", "text"),
             KeyFact.objects.order_by("document__uid", "index").values_list(
                 "document__uid", "index", "text", "origin", "status")):
    for row in rows.iterator(chunk_size=5000):
        digest.update(repr(row).encode())
print(json.dumps({"rows": first.rows, "document_sentences": DocumentSentence.objects.count(),
                  "summary_sentences": SummarySentence.objects.count(), "keyfacts": KeyFact.objects.count(),
                  "import_seconds": round(seconds, 2), "steps_end_seconds": ends, "import_cpu_seconds": cpu,
                  "workers_cpu_seconds": workers_cpu, "reimport_seconds": round(again_seconds, 2),
                  "reimport_changed": again.changed, "stored_sha256": digest.hexdigest()[:16]}))
'''


def run_once(code: Path, engine: str, data: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(code), PYTHONDONTWRITEBYTECODE="1",
               FINEGRAIN_MAX_UPLOAD_BYTES=str(max(data.stat().st_size, 200 * 1024 * 1024)))
    env.pop("CELERY_BROKER_URL", None)
    with tempfile.TemporaryDirectory(prefix="fg-import-") as temporary:
        if engine == "postgres":
            import psycopg

            with psycopg.connect(PG_ADMIN.replace("postgres://", "postgresql://"), autocommit=True) as connection:
                connection.execute("DROP DATABASE IF EXISTS finegrain_bench WITH (FORCE)")
                connection.execute("CREATE DATABASE finegrain_bench")
            env["DATABASE_URL"] = PG_BENCH
        else:
            env["DATABASE_URL"] = f"sqlite:///{temporary}/bench.sqlite3"
        env["FINEGRAIN_DATA_DIR"] = temporary
        done = subprocess.run([sys.executable, "-c", CHILD, str(data)], env=env, cwd=code, capture_output=True,
                              text=True)
    if done.returncode:
        raise SystemExit(f"import with {code} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["sqlite", "postgres"])
    parser.add_argument("--data", type=Path, default=None, help="default: benchmarks/out/scale-1x.jsonl")
    parser.add_argument("--before", default="", help="a git ref whose import runs in turn with this tree's")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    data = args.data or generate(1)
    with tempfile.TemporaryDirectory(prefix="fg-import-code-") as temporary:
        codes = {"after": ROOT}
        if args.before:
            codes["before"] = checkout(args.before, Path(temporary))
        for engine in [args.engine] if args.engine else ["sqlite", "postgres"]:
            runs: dict[str, list[dict]] = {name: [] for name in codes}
            digests = set()
            for _ in range(args.repeat):
                for name, code in codes.items():
                    line = {"engine": engine, "code": name, **run_once(code, engine, data)}
                    print(json.dumps(line), flush=True)
                    runs[name].append(line)
                    digests.add(line["stored_sha256"])
            seconds = {name: [run["import_seconds"] for run in runs[name]] for name in codes}
            summary = {"engine": engine, "median_import_seconds": {name: statistics.median(values)
                                                                   for name, values in seconds.items()},
                       "median_steps_end_seconds": {name: {step: statistics.median(run["steps_end_seconds"][step]
                                                                          for run in runs[name])
                                                                   for step in runs[name][0]["steps_end_seconds"]}
                                                    for name in codes},
                       "median_cpu_seconds": {name: {"import": statistics.median(run["import_cpu_seconds"]
                                                                                  for run in runs[name]),
                                                     "workers": statistics.median(run["workers_cpu_seconds"]
                                                                                   for run in runs[name])}
                                              for name in codes},
                       "same_rows": len(digests) == 1}
            if args.before:
                summary["ratio_before_after"] = round(statistics.median(seconds["before"])
                                                      / statistics.median(seconds["after"]), 2)
            print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    main()
