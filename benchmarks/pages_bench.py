"""The page benchmark: every page a manager, a reviewer and an annotator open, on a project at scale.

    python -m benchmarks.pages_bench build --scale 1 --database-url postgres://postgres@127.0.0.1:5432/fg_pages_scale
    python -m benchmarks.pages_bench build --scale 1 --database-url sqlite:///$PWD/benchmarks/out/pages-1x.sqlite3
    python -m benchmarks.pages_bench measure --database-url URL [--repeat 20] [--code REF] [--only NAMES] [--out F]
        [--variants all|tasks|none] [--polled]
    python -m benchmarks.pages_bench scales --at 1x=pages-1x.json --at 10x=pages-10x.json [--queries-only]

`build` makes the database once with benchmarks/scale.py's child steps (import; KV HITs; the KV labels of 3 simulated
annotators; FV HITs; KA HITs; the FV and KA labels), attention checks at 20%, from a `git archive` of HEAD so that
editing the tree while it runs changes nothing. `measure` then runs in this tree's code against that database: it
lists the GET pages of the URLconf, fills their slug and ids from the database, requests each `--repeat` times as each
role with Django's test client, and reports p50 / p99 time and response size per page and role; a page over 500 KB or
500 ms at p99 is flagged. Pages whose URL needs an object the database has none of are reported as skipped. With
--polled it also requests the fragments the pages poll, as htmx does (benchmarks/pages_measure.py: POLLED).

`scales` puts the --out of measures on databases of different scales side by side: per page, role, query string and
polled fragment, the SQL queries of a request at each scale, whether they are the same, and p50 time and size. Pages
are matched without their ids (a HIT's or a job's id differs between two databases).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.scale import CHECK_RATE, OUT, ROOT, SLUG, checkout, child, generate


def build(scale: float, database_url: str) -> None:
    data = generate(scale)
    if database_url.startswith("sqlite:///"):
        Path(database_url.removeprefix("sqlite:///")).unlink(missing_ok=True)
    else:
        import psycopg

        name = database_url.rsplit("/", 1)[1]
        admin = database_url.rsplit("/", 1)[0].replace("postgres://", "postgresql://") + "/postgres"
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            connection.execute(f'CREATE DATABASE "{name}"')
    with tempfile.TemporaryDirectory(prefix="fg-pages-") as temporary:
        code = checkout("HEAD", Path(temporary))
        work = OUT / "pages-data"
        work.mkdir(parents=True, exist_ok=True)
        steps = [("import", {"slug": SLUG, "rate": CHECK_RATE, "data": str(data)}),
                 ("build", {"slug": SLUG, "task": "kv"}),
                 ("simulate", {"slug": SLUG, "tasks": ["kv"]}),
                 ("build", {"slug": SLUG, "task": "fv"}),
                 ("build", {"slug": SLUG, "task": "ka"}),
                 ("simulate", {"slug": SLUG, "tasks": ["fv", "ka"]})]
        for step, args in steps:
            line = child(code, database_url, work, step, **args)
            print(json.dumps({"scale": scale, **line}), flush=True)


def compare(before: dict, after: dict) -> str:
    """A markdown table of the pages both runs timed (status 200), old and new side by side."""
    def key(row):
        return row["page"], row["role"], row.get("url", "")

    old = {key(row): row for row in before["rows"] if row.get("status") == 200}
    lines = ["| page | role | p50 ms before | p50 ms after | p99 ms before | p99 ms after | KB before | KB after | "
             "queries before / after | over 500 ms or 500 KB after |", "|" + " --- |" * 10]
    for row in after["rows"]:
        if row.get("status") != 200 or key(row) not in old:
            continue
        was = old[key(row)]
        lines.append(f"| {row['page']}{_query(row)} | {row['role']} | {was['p50_ms']:,.0f} | {row['p50_ms']:,.0f} | "
                     f"{was['p99_ms']:,.0f} | {row['p99_ms']:,.0f} | {was['kb']:,.1f} | {row['kb']:,.1f} | "
                     f"{was['queries']} / {row['queries']} | {'**yes**' if row['over'] else ''} |")
    return "\n".join(lines)


def by_scale(runs: list[tuple[str, dict]], queries_only: bool = False) -> str:
    """A markdown table of the pages every run answered (status 200 or 286), the scales side by side."""
    def key(row):
        # A polled row keeps its query string as the template writes it: `shown` is a time, not the same twice.
        url = row.get("url", "")
        query = row.get("query", url[url.index("?"):] if "?" in url else "")
        return row["page"], row["role"], query, row.get("polled", False), row.get("job", "")

    found = [{key(row): row for row in run["rows"] if row.get("status") in (200, 286)} for _, run in runs]
    names = [name for name, _ in runs]
    header = (["page", "role", "status"] + [f"queries {name}" for name in names] + ["same queries"]
              + ([] if queries_only else [f"p50 ms {name}" for name in names] + [f"KB {name}" for name in names]))
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row_key, row in found[-1].items():
        if not all(row_key in rows for rows in found):
            continue
        rows = [rows[row_key] for rows in found]
        page = f"{row['page']}{_query(row)}"
        if row.get("polled"):
            page += f" (polled{', ' + row['job'] if row.get('job') else ''})"
        counts = [str(each["queries"]) for each in rows]
        cells = [page, row["role"], "/".join(sorted({str(each["status"]) for each in rows}))] + counts
        cells.append("yes" if len(set(counts)) == 1 else "**no**")
        if not queries_only:
            cells += [f"{each['p50_ms']:,.1f}" for each in rows] + [f"{each['kb']:,.1f}" for each in rows]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _query(row: dict) -> str:
    """A variant's query string (the review page's filters), to tell its rows apart."""
    if row.get("query"):
        return f" `{row['query']}`"
    url = row.get("url", "")
    return f" `{url[url.index('?'):]}`" if "?" in url else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["build", "measure", "compare", "scales"])
    parser.add_argument("--before", type=Path, help="compare: the --out of a measure with --code (old code)")
    parser.add_argument("--after", type=Path, help="compare: the --out of a measure with this tree's code")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--only", default="", help="comma-separated URL pattern names")
    parser.add_argument("--code", default="",
                        help="measure with this git ref's code (git archive) instead of the tree's: old vs new")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--variants", choices=["all", "tasks", "none"], default="all",
                        help="measure: the review page per task and filter (all), per task, or its plain URL only")
    parser.add_argument("--polled", action="store_true", help="measure: also the fragments the pages poll")
    parser.add_argument("--at", action="append", default=[], metavar="LABEL=FILE",
                        help="scales: a measure's --out and its label (1x=pages-1x.json), smallest scale first")
    parser.add_argument("--queries-only", action="store_true", help="scales: the query counts alone")
    args = parser.parse_args()
    if args.command == "scales":
        runs = [(label, json.loads(Path(path).read_text()))
                for label, path in (entry.split("=", 1) for entry in args.at)]
        print(by_scale(runs, args.queries_only))
        return
    if args.command == "compare":
        print(compare(json.loads(args.before.read_text()), json.loads(args.after.read_text())))
        return
    if args.command == "build":
        build(args.scale, args.database_url)
        return
    env = dict(os.environ, DATABASE_URL=args.database_url, PYTHONDONTWRITEBYTECODE="1")
    env.pop("CELERY_BROKER_URL", None)
    command = [sys.executable, "-m", "benchmarks.pages_measure", "--repeat", str(args.repeat), "--only", args.only,
               "--variants", args.variants] + (["--polled"] if args.polled else [])
    if args.out:
        command += ["--out", str(args.out.resolve())]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fg-pages-code-") as temporary:
        code = ROOT
        if args.code:
            code = checkout(args.code, Path(temporary))
            shutil.copy(ROOT / "benchmarks" / "pages_measure.py", code / "benchmarks" / "pages_measure.py")
        env["PYTHONPATH"] = str(code)
        subprocess.run(command, env=env, cwd=code, check=True)
    print(f"measured in {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
