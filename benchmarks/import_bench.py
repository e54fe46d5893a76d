"""Import benchmark: a dataset file into a fresh database, then the same file again (nothing changes).

    python -m benchmarks.import_bench [--engine sqlite|postgres] [--data FILE] [--before REF] [--repeat N]
    python -m benchmarks.import_bench --job [--scale 1,10] [--engine ...] [--before REF] [--after REF] [--repeat N]
    python -m benchmarks.import_bench --upload [--engine postgres|sqlite] [--scale 1,10] [--after REF] [--pg-db NAME]
                                      [--redis-url URL] [--repeat N]

Default data: benchmarks/out/scale-1x.jsonl (`python -m benchmarks.scale generate --scale 1`: 225 documents,
2,025 summaries, 36.5 MB). With --before, the import of that commit's code (`git archive`) runs in turn with this
tree's, N times each (ABAB...), so that a shared machine's load falls on both alike; both must store the same
sentences and key-facts (a digest of every stored row is compared). Each import runs in its own process; the time
is `import_dataset` alone (Django's start and the migrations are not in it). Each run also prints when the steps of
the first import end (the file read and checked, the last text split, the write) and its CPU time, in the importing
process and in its splitting workers.

--job measures the path an upload takes instead: a Job row whose input file is the dataset (as the upload view
leaves it), run by the job's task body (`corpus.uploads.import_run`) in a fresh process, which reports its peak RSS
(ru_maxrss, the importing process; the splitting workers' peak is reported apart), the import's seconds and the
same digest; no re-import. --scale picks the scale benchmark's generated files (default 1). --after REF runs that
commit's code (`git archive`) instead of this tree's, so that edits made meanwhile cannot change a long run.

--upload measures the whole path as deployed, on PostgreSQL: gunicorn (deploy/gunicorn.conf.py, one worker) and a
Celery worker of the default queue (Redis broker, --concurrency 2 as deploy/compose.yaml) run from the code; a
manager logs in over HTTP, posts the file on the import page (a streamed multipart body), and the job runs in the
worker. While the job runs, every process of both process groups is read from /proc every 0.2 s; the figures are
each process's peak RSS (VmHWM), the last one read for a process that ended (the import's splitting workers), so a
lower bound for those. nginx is not in front (it buffers the body to disk before gunicorn sees it).
`--upload --engine sqlite` measures the embedded default instead, as `manage.py run_demo` runs it: a fresh SQLite
file (migrated), CELERY_BROKER_URL empty (kombu's filesystem transport in FINEGRAIN_BROKER_DIR, a temporary folder),
the same gunicorn, and one worker started as run_demo starts it (every queue, --concurrency 2, beat inside); the web
process and the worker share the broker folder and the database file. The figure `upload_to_finished_seconds` is
the wall time from the start of the POST to the job's `finished` timestamp (the same clock; the job row is read
every 0.2 s until it ends, but the figure does not depend on that). `documents` is the number of stored documents.

PostgreSQL: a scratch database (--pg-db, default `finegrain_bench`) on 127.0.0.1:5432 is dropped and re-created for
every import.
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
PG_SERVER = "postgres://postgres@127.0.0.1:5432/"

# Every stored sentence and key-fact, in order: two imports stored the same rows when their digests match.
DIGEST = r'''
def stored_digest():
    import hashlib
    from corpus.models import DocumentSentence, KeyFact, SummarySentence
    digest = hashlib.sha256()
    for rows in (DocumentSentence.objects.order_by("document__uid", "index").values_list(
                     "document__uid", "index", "text", "turn", "speaker"),
                 SummarySentence.objects.order_by("summary__document__uid", "summary__model", "index").values_list(
                     "summary__document__uid", "summary__model", "index", "text"),
                 KeyFact.objects.order_by("document__uid", "index").values_list(
                     "document__uid", "index", "text", "origin", "status")):
        for row in rows.iterator(chunk_size=5000):
            digest.update(repr(row).encode())
    return digest.hexdigest()[:16]
'''

# Runs in a child process with either tree's code: imports the file twice, prints one JSON line.
CHILD = r'''
import json, os, sys, time
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
''' + DIGEST + r'''
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
print(json.dumps({"rows": first.rows, "document_sentences": DocumentSentence.objects.count(),
                  "summary_sentences": SummarySentence.objects.count(), "keyfacts": KeyFact.objects.count(),
                  "import_seconds": round(seconds, 2), "steps_end_seconds": ends, "import_cpu_seconds": cpu,
                  "workers_cpu_seconds": workers_cpu, "reimport_seconds": round(again_seconds, 2),
                  "reimport_changed": again.changed, "stored_sha256": stored_digest()}))
'''

# The upload's path: a Job row naming the file, run by the job's task body; one JSON line with the peak RSS.
JOB_CHILD = r'''
import json, os, resource, sys, time
from pathlib import Path
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
''' + DIGEST + r'''
from django.conf import settings
from django.core.management import call_command
from corpus.models import Job, Project, Summary
from corpus.uploads import import_run
call_command("migrate", verbosity=0)
project = Project.objects.create(slug="bench", name="bench")
path = Path(sys.argv[1])
# Where the upload view leaves a file; a symbolic link, since the job deletes its input when it ends.
stored = Path(settings.MEDIA_ROOT) / "uploads" / "bench" / path.name
stored.parent.mkdir(parents=True, exist_ok=True)
stored.symlink_to(path.resolve())
job = Job.objects.create(project=project, kind="import", params={"filename": path.name},
                         input_file=str(stored.relative_to(settings.MEDIA_ROOT)))
def rss_mb(field):
    return round(int(next(line for line in open("/proc/self/status") if line.startswith(field)).split()[1]) / 1024, 1)
before = {"rss_mb": rss_mb("VmRSS:"), "peak_rss_mb": rss_mb("VmHWM:")}
started, cpu = time.perf_counter(), time.process_time()
import_run(job_id=job.pk)
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
job.refresh_from_db()
if job.status != "done":
    raise SystemExit(f"the job failed: {job.error} {job.result}")
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rows": Summary.objects.count(), "import_seconds": round(seconds, 2),
                  "import_cpu_seconds": round(cpu, 2),
                  "workers_cpu_seconds": round(children.ru_utime + children.ru_stime, 2),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                  "before_import": before, "workers_peak_rss_mb": round(children.ru_maxrss / 1024, 1),
                  "stored_sha256": stored_digest()}))
'''


# --upload: the database, a manager and a project, made once before the servers start.
UPLOAD_SETUP = r'''
import os, sys
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
from corpus.models import Membership, Project
call_command("migrate", verbosity=0)
project = Project.objects.create(slug="bench", name="bench")
manager = get_user_model().objects.create_user("bench-manager", password=sys.argv[1])
Membership.objects.create(project=project, user=manager, role=Membership.Role.MANAGER)
'''


def processes(group: int) -> dict[int, dict]:
    """Every live process of a process group: its command, RSS and peak RSS (VmHWM), in MB."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getpgid(int(entry.name)) != group:
                continue
            status = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines() if ":" in line)
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ProcessLookupError):
            continue
        if "VmHWM" in status:
            found[int(entry.name)] = {"command": command[:80],
                                      "rss_mb": round(int(status["VmRSS"].split()[0]) / 1024, 1),
                                      "peak_rss_mb": round(int(status["VmHWM"].split()[0]) / 1024, 1)}
    return found


def _job_row(engine: str, database: str, job_id: int):
    """A function that reads the job's (status, started, finished, error), and one that counts stored documents;
    datetimes as aware UTC datetimes on both engines."""
    from datetime import UTC, datetime

    if engine == "postgres":
        import psycopg

        connection = psycopg.connect(database.replace("postgres://", "postgresql://"), autocommit=True)
    else:
        import sqlite3

        connection = sqlite3.connect(database.removeprefix("sqlite:///"), timeout=30, isolation_level=None)
    mark = "%s" if engine == "postgres" else "?"

    def moment(value):
        if value is None or isinstance(value, datetime):
            return value
        return datetime.fromisoformat(value).replace(tzinfo=UTC)  # Django stores UTC in SQLite

    def job():
        status, started, finished, error = connection.execute(
            f"SELECT status, started, finished, error FROM corpus_job WHERE id = {mark}", [job_id]).fetchone()
        return status, moment(started), moment(finished), error

    def documents():
        return connection.execute("SELECT count(*) FROM corpus_document").fetchone()[0]

    return connection, job, documents


def upload_once(code: Path, data: Path, *, engine: str = "postgres", pg_db: str, redis_url: str,
                port: int = 8765) -> dict:
    import secrets
    import signal
    import time
    from datetime import UTC, datetime

    import httpx

    password = secrets.token_urlsafe(16)
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="fg-upload-") as temporary:
        env = dict(os.environ, PYTHONPATH=str(code), PYTHONDONTWRITEBYTECODE="1",
                   FINEGRAIN_DATA_DIR=temporary, GUNICORN_BIND=f"127.0.0.1:{port}",
                   GUNICORN_WORKERS="1", GUNICORN_TIMEOUT="600",
                   FINEGRAIN_MAX_UPLOAD_BYTES=str(max(data.stat().st_size, 200 * 1024 * 1024)))
        env.pop("FINEGRAIN_REQUIRE_SERVICES", None)
        if engine == "postgres":
            import psycopg
            import redis

            database = PG_SERVER + pg_db
            with psycopg.connect(PG_ADMIN.replace("postgres://", "postgresql://"), autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{pg_db}" WITH (FORCE)')
                connection.execute(f'CREATE DATABASE "{pg_db}"')
            redis.Redis.from_url(redis_url).flushdb()
            env.update(DATABASE_URL=database, CELERY_BROKER_URL=redis_url)
            worker_command = ["-Q", "default", "--concurrency", "2", "--loglevel", "INFO", "--without-gossip",
                              "--without-mingle", "-n", "bench@%h"]
        else:
            # The embedded default: a SQLite file and the filesystem broker, both in this run's own folder.
            database = f"sqlite:///{temporary}/finegrain.sqlite3"
            env.pop("CACHE_URL", None)
            env.update(DATABASE_URL=database, CELERY_BROKER_URL="", FINEGRAIN_BROKER_DIR=f"{temporary}/broker")
            # As run_demo's worker (annotation/management/commands/run_demo.py: demo_worker_command).
            worker_command = ["--queues", "default,assist,crowd", "--concurrency", "2", "--beat", "--schedule",
                              f"{temporary}/celerybeat-schedule", "--loglevel", "INFO", "--without-gossip",
                              "--without-mingle", "--hostname", "bench@%h"]
        subprocess.run([sys.executable, "-c", UPLOAD_SETUP, password], env=env, cwd=code, check=True)
        logs = Path(temporary) / "servers.log"
        with logs.open("w") as log:
            web = subprocess.Popen([sys.executable, "-m", "gunicorn", "--config", "deploy/gunicorn.conf.py",
                                    "config.wsgi:application"], env=env, cwd=code, stdout=log, stderr=log,
                                   process_group=0)
            worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "config", "worker", *worker_command],
                                      env=env, cwd=code, stdout=log, stderr=log, process_group=0)
        try:
            deadline = time.monotonic() + 120
            while "ready." not in logs.read_text() or not _answers(base + "/health/"):
                if time.monotonic() > deadline or web.poll() is not None or worker.poll() is not None:
                    raise SystemExit(f"the servers did not start:\n{logs.read_text()[-3000:]}")
                time.sleep(0.5)
            with httpx.Client(base_url=base, timeout=900) as client:
                client.get("/accounts/login/")
                response = client.post("/accounts/login/", data={
                    "username": "bench-manager", "password": password,
                    "csrfmiddlewaretoken": client.cookies["csrftoken"]})
                if response.status_code != 302:
                    raise SystemExit(f"log-in refused: {response.status_code}")
                client.get("/projects/bench/import/")
                started_at = {"web": processes(web.pid), "worker": processes(worker.pid)}
                begun = time.perf_counter()
                begun_wall = datetime.now(UTC)
                with data.open("rb") as file:
                    response = client.post("/projects/bench/import/", data={
                        "csrfmiddlewaretoken": client.cookies["csrftoken"]},
                        files={"file": (data.name, file, "application/octet-stream")})
                upload_seconds = time.perf_counter() - begun
            if response.status_code != 302:
                raise SystemExit(f"the upload was refused: {response.status_code} {response.text[:2000]}")
            job_id = int(response.headers["location"].rstrip("/").rsplit("/", 1)[1])
            seen = {"web": {}, "worker": {}}
            connection, job_row, count_documents = _job_row(engine, database, job_id)
            try:
                while True:
                    for name, server in (("web", web), ("worker", worker)):
                        seen[name].update(processes(server.pid))
                    status, started, finished, error = job_row()
                    if status in ("done", "failed"):
                        break
                    if time.perf_counter() - begun > 3600:
                        raise SystemExit("the job did not end within an hour")
                    time.sleep(0.2)
                seen_ended = time.perf_counter() - begun
                documents = count_documents()
            finally:
                connection.close()
            for name, server in (("web", web), ("worker", worker)):
                seen[name].update(processes(server.pid))
        finally:
            for server in (web, worker):
                try:
                    os.killpg(server.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            for server in (web, worker):
                try:
                    server.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
                    server.wait()
    if status != "done":
        raise SystemExit(f"the job failed: {error}")
    return {"engine": engine, "file": data.name, "megabytes": round(data.stat().st_size / 1e6, 1),
            "documents": documents, "upload_seconds": round(upload_seconds, 2),
            "job_seconds": round((finished - started).total_seconds(), 2),
            "upload_to_finished_seconds": round((finished - begun_wall).total_seconds(), 2),
            "upload_to_end_seen_seconds": round(seen_ended, 2),
            "before_upload": started_at, "processes": seen}


def _answers(url: str) -> bool:
    import httpx

    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def run_once(code: Path, engine: str, data: Path, *, job: bool = False, pg_db: str = "finegrain_bench") -> dict:
    env = dict(os.environ, PYTHONPATH=str(code), PYTHONDONTWRITEBYTECODE="1",
               FINEGRAIN_MAX_UPLOAD_BYTES=str(max(data.stat().st_size, 200 * 1024 * 1024)))
    env.pop("CELERY_BROKER_URL", None)
    with tempfile.TemporaryDirectory(prefix="fg-import-") as temporary:
        if engine == "postgres":
            import psycopg

            with psycopg.connect(PG_ADMIN.replace("postgres://", "postgresql://"), autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{pg_db}" WITH (FORCE)')
                connection.execute(f'CREATE DATABASE "{pg_db}"')
            env["DATABASE_URL"] = PG_SERVER + pg_db
        else:
            env["DATABASE_URL"] = f"sqlite:///{temporary}/bench.sqlite3"
        env["FINEGRAIN_DATA_DIR"] = temporary
        done = subprocess.run([sys.executable, "-c", JOB_CHILD if job else CHILD, str(data)], env=env, cwd=code,
                              capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"import with {code} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["sqlite", "postgres"])
    parser.add_argument("--data", type=Path, default=None, help="default: benchmarks/out/scale-1x.jsonl")
    parser.add_argument("--before", default="", help="a git ref whose import runs in turn with this tree's")
    parser.add_argument("--after", default="", help="a git ref whose code runs instead of this tree's")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--job", action="store_true", help="through the job's task body, with its peak RSS")
    parser.add_argument("--upload", action="store_true",
                        help="the whole path: an HTTP upload to gunicorn, the job in a Celery worker "
                             "(PostgreSQL and Redis, or with --engine sqlite the embedded default)")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/15", help="--upload: the Celery broker")
    parser.add_argument("--scale", default="1", help="with --job: the generated files' scales, e.g. 1,10")
    parser.add_argument("--pg-db", default="finegrain_bench", help="the scratch PostgreSQL database's name")
    args = parser.parse_args()
    if args.job or args.upload:
        files = [args.data] if args.data else [generate(float(scale)) for scale in args.scale.split(",")]
    else:
        files = [args.data or generate(1)]
    with tempfile.TemporaryDirectory(prefix="fg-import-code-") as temporary:
        for name in ("after", "before"):
            (Path(temporary) / name).mkdir()
        codes = {"after": checkout(args.after, Path(temporary) / "after") if args.after else ROOT}
        if args.before:
            codes["before"] = checkout(args.before, Path(temporary) / "before")
        for data in files:
            if args.upload:
                for _ in range(args.repeat):
                    line = {"code": args.after or "tree", "load": os.getloadavg()[0],
                            **upload_once(codes["after"], data, engine=args.engine or "postgres", pg_db=args.pg_db,
                                          redis_url=args.redis_url)}
                    print(json.dumps(line), flush=True)
                continue
            for engine in [args.engine] if args.engine else ["sqlite", "postgres"]:
                if args.job:
                    measure_job(codes, engine, data, args.repeat, args.pg_db)
                else:
                    measure(codes, engine, data, args.repeat, args.pg_db, bool(args.before))


def measure_job(codes: dict[str, Path], engine: str, data: Path, repeat: int, pg_db: str) -> None:
    runs: dict[str, list[dict]] = {name: [] for name in codes}
    for _ in range(repeat):
        for name, code in codes.items():
            line = {"engine": engine, "file": data.name, "code": name, "load": os.getloadavg()[0],
                    **run_once(code, engine, data, job=True, pg_db=pg_db)}
            print(json.dumps(line), flush=True)
            runs[name].append(line)
    summary = {"engine": engine, "file": data.name,
               "median_import_seconds": {name: statistics.median(run["import_seconds"] for run in runs[name])
                                         for name in codes},
               "median_cpu_seconds": {name: {part: statistics.median(run[f"{part}_cpu_seconds"] for run in runs[name])
                                             for part in ("import", "workers")} for name in codes},
               "max_peak_rss_mb": {name: max(run["peak_rss_mb"] for run in runs[name]) for name in codes},
               "same_rows": len({run["stored_sha256"] for name in codes for run in runs[name]}) == 1}
    print(json.dumps(summary), flush=True)


def measure(codes: dict[str, Path], engine: str, data: Path, repeat: int, pg_db: str, before: bool) -> None:
    runs: dict[str, list[dict]] = {name: [] for name in codes}
    digests = set()
    for _ in range(repeat):
        for name, code in codes.items():
            line = {"engine": engine, "code": name, **run_once(code, engine, data, pg_db=pg_db)}
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
    if before:
        summary["ratio_before_after"] = round(statistics.median(seconds["before"])
                                              / statistics.median(seconds["after"]), 2)
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    main()
