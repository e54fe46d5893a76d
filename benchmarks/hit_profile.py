"""The serving path in-process: time and SQL queries of the HIT page and of saving one answer, pages and API.

    python -m benchmarks.hit_profile --db sqlite --pg-database fg_x --redis-url redis://127.0.0.1:6379/N
    python -m benchmarks.hit_profile --db postgres --cprofile answer     # the 30 costliest functions of one path

The data is benchmarks/hit_load.py's set-up (a 10,000-word text, FV HITs of 8 sentences, a contextual mapping and
an AI judgment on every sentence), built on a fresh database. In a child process, the Django test client sends
each request `--requests` times after a warm-up (CSRF enforced, logged in through the session cookie or, for the
API, a token) and reports the median and p90 wall time, the mean CPU time of the process (what `--cprofile`
profiles) and the number of SQL queries of one request.
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from benchmarks.hit_load import ROOT, add_database_arguments, build, django_setup

PATHS = ("page", "answer", "api_page", "api_answer")


def measure(setup: dict, requests: int, profile: str | None) -> dict:
    django_setup()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    info = setup["sessions"][0]
    page = f"/work/hits/{info['assignment']}/"
    api_page = f"/api/assignments/{info['assignment']}/"
    client = Client(enforce_csrf_checks=True)
    client.cookies["sessionid"], client.cookies["csrftoken"] = info["session"], info["csrf"]
    api = Client(HTTP_AUTHORIZATION=f"Token {info['token']}")
    counter = iter(range(10**9))

    def answer_form():
        position = next(counter) % info["units"]
        # Form-encoded, as htmx and the load test send it (the test client's default would be multipart).
        return client.post(f"{page}answers/{position}/", urlencode({
            f"u{position}-ai_right": "yes", f"u{position}-has_error": "no", f"u{position}-error_types": "",
            f"u{position}-seconds": "1.0"}), content_type="application/x-www-form-urlencoded",
            HTTP_X_CSRFTOKEN=info["csrf"], HTTP_HX_REQUEST="true")

    def answer_api():
        position = next(counter) % info["units"]
        return api.post(f"{api_page}answers/", {"unit": str(position), "ai_right": True, "has_error": False,
                                                "error_types": [], "seconds_on_item": 1.0},
                        content_type="application/json")

    calls = {"page": lambda: client.get(page), "answer": answer_form, "api_page": lambda: api.get(api_page),
             "api_answer": answer_api}
    result = {}
    for name, call in calls.items():
        for _ in range(5):  # warm-up: connections, caches, templates
            response = call()
            assert response.status_code == 200, (name, response.status_code, response.content[:300])
        with CaptureQueriesContext(connection) as queries:
            call()
        # Read now: the next request's request_started signal empties the connection's query log.
        sql = [query["sql"][:200] for query in queries.captured_queries]
        times, cpu = [], []
        for _ in range(requests):
            began, began_cpu = time.perf_counter(), time.process_time()
            call()
            times.append((time.perf_counter() - began) * 1000)
            cpu.append((time.process_time() - began_cpu) * 1000)
        times.sort()
        # CPU time of this process alone (the database server's is not in it): on a shared machine it varies far
        # less than the wall time, which includes waiting for a core.
        result[name] = {"queries": len(sql), "median_ms": round(statistics.median(times), 2),
                        "p90_ms": round(times[int(0.9 * (len(times) - 1))], 2),
                        "cpu_ms": round(statistics.mean(cpu), 2), "sql": sql}
        if profile == name:
            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
            for _ in range(requests):
                call()
            profiler.disable()
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(90)
            pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
            result[name]["profile"] = out.getvalue()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_database_arguments(parser)
    parser.set_defaults(annotators=3)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--cprofile", choices=PATHS)
    parser.add_argument("--sql", action="store_true", help="print every query of each path")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        setup = json.loads(Path(args.child[0]).read_text())
        print(json.dumps(measure(setup, int(args.child[1]), args.cprofile)))
        return
    setup, env_vars, cache = build(args)
    setup_file = ROOT / "benchmarks" / "out" / "hit_profile_setup.json"
    setup_file.parent.mkdir(parents=True, exist_ok=True)
    setup_file.write_text(json.dumps(setup))
    env = {**os.environ, **env_vars}
    env.pop("CELERY_BROKER_URL", None)
    command = [sys.executable, "-m", "benchmarks.hit_profile", "--child", str(setup_file), str(args.requests)]
    if args.cprofile:
        command += ["--cprofile", args.cprofile]
    output = subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    result = json.loads(output.strip().splitlines()[-1])
    print(f"db {args.db}, cache {cache}, {args.requests} requests each, load average "
          f"{' '.join(f'{load:.1f}' for load in os.getloadavg())}")
    for name in PATHS:
        row = result[name]
        print(f"{name:11} queries {row['queries']:3}  median {row['median_ms']:7.2f} ms  p90 {row['p90_ms']:7.2f} ms  "
              f"CPU {row['cpu_ms']:6.2f} ms")
        if args.sql:
            for sql in row["sql"]:
                print("    ", sql)
        if "profile" in row:
            print(row["profile"])


if __name__ == "__main__":
    main()
