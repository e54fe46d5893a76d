"""HIT page load test: 50 simulated annotators on gunicorn + PostgreSQL (loopback), an FV HIT on a 10,000-word text.

    python -m benchmarks.hit_load                       # 50 annotators, 60 s
    python -m benchmarks.hit_load --annotators 50 --seconds 60 --think 1.0 --workers 4 --worker-class sync
    python -m benchmarks.hit_load --annotators 10 --think 0 --db sqlite    # the embedded default, no Redis
    python -m benchmarks.hit_load --annotators 10 --think 0 --api          # the same work through the REST API
    python -m benchmarks.hit_load --annotators 10 --think 0 --seconds 420 --gunicorn-config deploy/gunicorn.conf.py
                                                        # as deployed, long enough for workers to be recycled

Set-up (in a child process, on a scratch database that is dropped and re-created: PostgreSQL `finegrain_hitload`,
or with `--db sqlite` the file benchmarks/out/hitload.sqlite3 under the settings' SQLite options): one
10,000-word synthetic document, enough summaries of 8 sentences for every annotator to hold an FV HIT (3 annotators
per unit), a contextual mapping (30% highlighted) and an AI judgment with a reason for every summary sentence, and
one logged-in session per annotator with a reserved HIT.

Load: each annotator opens its HIT page, then answers its sentences one by one (an htmx POST per answer, with a
random think time of `--think` seconds on average, none with 0) and reopens the page after every 8 answers, until
the time is up. `--api` does the same through the REST API with a token: the assignment with its units
(GET /api/assignments/<id>/) and one JSON answer per item (POST /api/assignments/<id>/answers/). Targets: page p99
<= 150 ms, answer p99 <= 50 ms. Afterwards the database is checked: every answer that got a 200 is stored, with the
last value sent (no lost or stale writes). The report also gives the longest time in which no request finished and
the whole seconds without one (a stall, e.g. workers recycled together), the workers recycled (from gunicorn's log)
and the workers' largest resident memory at the start, at the end and at most (sampled every 5 s).
"""

import argparse
import http.client
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
PG_SERVER = "postgres://postgres@127.0.0.1:5432/"
SQLITE_FILE = ROOT / "benchmarks" / "out" / "hitload.sqlite3"
# Redis as the cache, as in production (deploy/env.example): sessions and the rendered source text live there.
# `--cache local` is the embedded default: each process's memory, sessions in the database.
CACHE_BENCH = "redis://127.0.0.1:6379/9"
SENTENCES_PER_SUMMARY = 8
# The set-up process and gunicorn must share the key: sessions carry a hash made with it.
BASE_ENV = {"DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1,testserver",
            "SECRET_KEY": "hit-load-benchmark-only-" + "k" * 40, "LOG_LEVEL": "WARNING"}


def bench_env(args, cache: str) -> dict:
    database = PG_SERVER + args.pg_database if args.db == "postgres" else f"sqlite:///{SQLITE_FILE}"
    return {**BASE_ENV, "DATABASE_URL": database, "CACHE_URL": args.redis_url if cache == "redis" else ""}


def django_setup():
    """In a child process started with `bench_env` in its environment."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()


def prepare(annotators: int) -> dict:
    """Runs in a child process: builds the data and returns what the load generator needs."""
    django_setup()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command
    from django.middleware.csrf import _get_new_csrf_string
    from rest_framework.authtoken.models import Token

    from annotation.models import Annotator
    from annotation.services.assignment import reserve_next_hit
    from annotation.services.hits import build_hits
    from assist.models import ContextualMapping, PreLabel
    from benchmarks.synthetic import document, sentence
    from corpus.importing import import_dataset
    from corpus.models import Membership, Project, SummarySentence

    call_command("migrate", verbosity=0)
    rng = random.Random(11)
    text = document(rng, 10_000, dialogue=False, redacted=True)
    summaries = -(-annotators // 3)
    rows = [{"uid": "long-1", "doc_id": "long-1", "source": "Bench", "domain": "news", "input_type": "non-dialogue",
             "redact_type": "redacted", "model": f"model-{m:02d}", "document": text,
             "summary": " ".join(sentence(rng, True) for _ in range(SENTENCES_PER_SUMMARY))}
            for m in range(summaries)]
    project = Project.objects.create(slug="load", name="Load test", attention_check_rate=0)
    import_dataset(project=project, data="\n".join(json.dumps(r) for r in rows).encode(), filename="load.jsonl")
    document_row = project.documents.get()
    n_source = document_row.sentences.count()
    for target in SummarySentence.objects.filter(summary__document=document_row):
        ranked = rng.sample(range(n_source), n_source)
        ContextualMapping.objects.create(summary_sentence=target, ranked=ranked, scores=[0.5] * n_source,
                                         highlighted=sorted(ranked[: int(0.3 * n_source) + 1]), fraction=0.3,
                                         model_name="bench", model_version="1")
        PreLabel.objects.create(summary_sentence=target, category="no_error", status="ok",
                                backend="offline-similarity", model="bench", prompt_version="bench",
                                reason="The closest source sentence says the same thing in other words.")
    build_hits(project, "fv")
    User = get_user_model()
    sessions = []
    for index in range(annotators):
        user = User.objects.create_user(f"load{index:03d}", password="unused-password-1")
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
        annotator = Annotator.objects.create(user=user, provider=Annotator.Provider.ACCOUNT, external_id=str(user.pk))
        assignment = reserve_next_hit(annotator, project, "fv", confirmed=True)
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        sessions.append({"session": session.session_key, "csrf": _get_new_csrf_string(),
                         "token": Token.objects.create(user=user).key,
                         "assignment": str(assignment.public_id), "units": assignment.hit.units.count()})
    return {"words": document_row.word_count, "source_sentences": n_source, "summaries": summaries,
            "sessions": sessions}


def count_labels(expected: dict) -> dict:
    """Runs in a child process after the load: compare the stored labels with the last answer sent for each."""
    django_setup()
    from annotation.models import Label

    stored = {(str(a), p): h for a, p, h in Label.objects.values_list(
        "assignment__public_id", "unit__position", "has_error")}
    wanted = {(a, int(p)): h for key, h in expected.items() for a, p in [key.split("|")]}
    missing = [key for key in wanted if key not in stored]
    stale = [key for key, value in wanted.items() if key in stored and stored[key] != value]
    return {"labels_in_db": len(stored), "answers_acknowledged": len(wanted), "missing": len(missing),
            "stale": len(stale)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, seconds: float) -> None:
    """Until a server started in the background accepts connections on `port` (or `seconds` have passed: the
    first request then fails and says why)."""
    for _ in range(int(seconds * 10)):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)


def child(env_vars: dict, target: str, *args) -> dict:
    env = {**os.environ, **env_vars}
    env.pop("CELERY_BROKER_URL", None)
    output = subprocess.run([sys.executable, "-m", "benchmarks.hit_load", "--child", target, *args], env=env,
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def summarize(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1),
            "p99": round(percentile(values, 99), 1), "max": round(max(values), 1),
            "mean": round(statistics.fmean(values), 1)}


class Annotator:
    """One simulated annotator: a keep-alive connection (the standard library's, to keep the client light)."""

    def __init__(self, port: int, info: dict, api: bool = False):
        self.port, self.info, self.api = port, info, api
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        if api:
            self.headers = {"Authorization": f"Token {info['token']}", "Accept": "application/json"}
            self.page_path = f"/api/assignments/{info['assignment']}/"
        else:
            self.headers = {"Cookie": f"sessionid={info['session']}; csrftoken={info['csrf']}",
                            "X-CSRFToken": info["csrf"], "HX-Request": "true"}
            self.page_path = f"/work/hits/{info['assignment']}/"

    def request(self, method: str, path: str, body: str | None = None) -> tuple[int, float]:
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/json" if self.api else "application/x-www-form-urlencoded"
        began = time.perf_counter()
        for _attempt in (1, 2):
            try:
                self.connection.request(method, path, body=body, headers=headers)
                response = self.connection.getresponse()
                response.read()
                return response.status, (time.perf_counter() - began) * 1000
            except (http.client.HTTPException, OSError):
                # The server closed an idle keep-alive connection: a browser reconnects and sends again.
                self.connection.close()
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        return 0, (time.perf_counter() - began) * 1000

    def open_page(self) -> tuple[int, float]:
        return self.request("GET", self.page_path)

    def answer(self, position: int, has_error: bool) -> tuple[int, float]:
        # Every AI judgment of the set-up says "no error": agreeing with it is saying the sentence has none (an
        # answer that contradicts itself is refused).
        if self.api:
            body = json.dumps({"unit": str(position), "ai_right": not has_error, "has_error": has_error,
                               "error_types": ["entity"] if has_error else [], "seconds_on_item": 1.0})
            return self.request("POST", f"{self.page_path}answers/", body)
        body = urlencode([(f"u{position}-ai_right", "no" if has_error else "yes"),
                          (f"u{position}-has_error", "yes" if has_error else "no"), (f"u{position}-error_types", ""),
                          *([(f"u{position}-error_types", "entity")] if has_error else []),
                          (f"u{position}-seconds", "1.0")])
        return self.request("POST", f"{self.page_path}answers/{position}/", body)


def run_load(port: int, sessions: list[dict], seconds: float, think: float, api: bool = False) -> dict:
    pages, answers, errors, done = [], [], [], []
    last_sent: dict[str, bool] = {}
    lock = threading.Lock()
    start = threading.Barrier(len(sessions) + 1)
    deadline = [0.0]

    def annotator(info: dict, seed: int):
        rng = random.Random(seed)
        client = Annotator(port, info, api)
        start.wait()
        time.sleep(rng.uniform(0, think))  # annotators do not all arrive in the same millisecond
        answered = 0
        while time.monotonic() < deadline[0]:
            if answered % 8 == 0:
                status, elapsed = client.open_page()
                with lock:
                    (pages if status == 200 else errors).append(elapsed if status == 200 else f"GET {status}")
                    done.append(time.monotonic())
            if think:
                time.sleep(rng.expovariate(1 / think))
            position, has_error = answered % info["units"], rng.random() < 0.5
            status, elapsed = client.answer(position, has_error)
            with lock:
                done.append(time.monotonic())
                if status == 200:
                    answers.append(elapsed)
                    last_sent[f"{info['assignment']}|{position}"] = has_error
                else:
                    errors.append(f"POST {status}")
            answered += 1

    threads = [threading.Thread(target=annotator, args=(info, i)) for i, info in enumerate(sessions)]
    for thread in threads:
        thread.start()
    deadline[0] = time.monotonic() + seconds
    start.wait()
    began = time.monotonic()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - began
    return {"pages": summarize(pages), "answers": summarize(answers), **silences(done, began, began + wall),
            "errors": errors[:20],
            "error_count": len(errors), "wall_seconds": round(wall, 1),
            "requests_per_second": round((len(pages) + len(answers)) / wall, 1), "last_sent": last_sent}


def silences(done: list[float], began: float, ended: float) -> dict:
    """How long the server answered nothing: the longest wait between two finished requests (or the run's edges),
    and the whole seconds of the run in which no request finished."""
    times = [began, *sorted(done), ended]
    longest = max(b - a for a, b in zip(times, times[1:], strict=False))
    busy = {int(t - began) for t in done}
    return {"longest_silence_ms": round(longest * 1000, 1),
            "silent_seconds": sum(1 for second in range(int(ended - began)) if second not in busy)}


def worker_memory(server_pid: int) -> dict[int, int]:
    """Resident memory (kB) of each process whose parent is the gunicorn master."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if int(fields.get("PPid", "0").strip()) == server_pid:
            found[int(entry.name)] = int(fields.get("VmRSS", "0 kB").split()[0])
    return found


def warm_up(port: int, sessions: list[dict], requests: int, api: bool = False) -> None:
    """Open pages first, several at once, so that every worker has its database connection and the rendered
    source in its cache (what a server that has been up for a minute has)."""
    threads = [threading.Thread(target=lambda info=info: Annotator(port, info, api).open_page())
               for info in (sessions * requests)[:requests]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def build(args) -> tuple[dict, dict, str]:
    """A fresh database with the set-up of `prepare`; returns it, the environment to serve it with, the cache."""
    cache = args.cache or ("redis" if args.db == "postgres" else "local")
    env_vars = bench_env(args, cache)
    if args.db == "postgres":
        import psycopg

        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{args.pg_database}"')
            conn.execute(f'CREATE DATABASE "{args.pg_database}"')
    else:
        SQLITE_FILE.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{SQLITE_FILE}{suffix}").unlink(missing_ok=True)
    if cache == "redis":
        import redis

        redis.Redis.from_url(args.redis_url).flushdb()
    setup = child(env_vars, "prepare", str(args.annotators))
    return setup, env_vars, cache


def add_database_arguments(parser) -> None:
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--db", default="postgres", choices=["postgres", "sqlite"])
    parser.add_argument("--pg-database", default="finegrain_hitload", help="dropped and re-created")
    parser.add_argument("--redis-url", default=CACHE_BENCH, help="its database is flushed")
    parser.add_argument("--cache", choices=["redis", "local"],
                        help="redis (the default with PostgreSQL, as deployed) or local (the default with SQLite: "
                             "the embedded set-up, no server)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_database_arguments(parser)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--think", type=float, default=1.0, help="mean seconds between two answers")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--worker-class", default="sync", choices=["sync", "gthread"])
    parser.add_argument("--api", action="store_true", help="the REST API with a token instead of the pages")
    parser.add_argument("--gunicorn-config", metavar="FILE",
                        help="serve with a gunicorn config file, e.g. deploy/gunicorn.conf.py (worker recycling "
                             "as production has it); the options here still set the workers and threads")
    parser.add_argument("--max-requests", type=int, help="override the recycling point (0: never recycle)")
    parser.add_argument("--max-requests-jitter", type=int)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        target, *rest = args.child
        if target == "prepare":
            print(json.dumps(prepare(int(rest[0]))))
        else:
            print(json.dumps(count_labels(json.loads(Path(rest[0]).read_text()))))
        return

    setup, env_vars, cache = build(args)
    print(f"set-up: {setup['words']} words, {setup['source_sentences']} source sentences, "
          f"{setup['summaries']} summaries x {SENTENCES_PER_SUMMARY} sentences, {args.annotators} annotators")
    port = free_port()
    env = {**os.environ, **env_vars}
    env.pop("CELERY_BROKER_URL", None)
    log = ROOT / "benchmarks" / "out" / "hit_load_gunicorn.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    command = [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers",
               str(args.workers), "--worker-class", args.worker_class, "--threads", str(args.threads),
               "--keep-alive", "30", "--log-level", "info", "--error-logfile", str(log), "--access-logfile",
               "/dev/null"]
    if args.gunicorn_config:
        command += ["--config", str(Path(args.gunicorn_config).resolve())]
    if args.max_requests is not None:
        command += ["--max-requests", str(args.max_requests)]
    if args.max_requests_jitter is not None:
        command += ["--max-requests-jitter", str(args.max_requests_jitter)]
    server = subprocess.Popen(command, cwd=ROOT, env=env)
    memory: list[dict[int, int]] = []
    sampling = threading.Event()

    def sample():
        while not sampling.wait(5):
            memory.append(worker_memory(server.pid))

    try:
        wait_for_port(port, seconds=30)
        warm_up(port, setup["sessions"], 4 * args.workers, args.api)
        memory.append(worker_memory(server.pid))
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        result = run_load(port, setup["sessions"], args.seconds, args.think, args.api)
        sampling.set()
        memory.append(worker_memory(server.pid))
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    logged = log.read_text(errors="replace")
    result["worker_restarts"] = logged.count("Autorestarting worker")
    result["worker_rss_mb"] = {"start": round(max(memory[0].values(), default=0) / 1024, 1),
                               "end": round(max(memory[-1].values(), default=0) / 1024, 1),
                               "max": round(max((max(m.values(), default=0) for m in memory), default=0) / 1024, 1)}
    sent_file = ROOT / "benchmarks" / "out" / "hit_load_sent.json"
    sent_file.parent.mkdir(parents=True, exist_ok=True)
    sent_file.write_text(json.dumps(result.pop("last_sent")))
    check = child(env_vars, "count", str(sent_file))
    report = {"db": args.db, "cache": cache, "client": "api" if args.api else "pages",
              "annotators": args.annotators, "seconds": args.seconds, "think": args.think,
              "load_average": " ".join(f"{load:.1f}" for load in os.getloadavg()),
              "gunicorn": f"{args.workers} workers x {args.threads} threads ({args.worker_class})", **result,
              "stored": check}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
