"""Import benchmark: the UniSumEval-scale synthetic file into a fresh database, then a re-import (no changes).

    python -m benchmarks.import_bench            # both engines, side by side in one run
    python -m benchmarks.import_bench --engine sqlite|postgres

PostgreSQL: a scratch database `finegrain_bench` on 127.0.0.1:5432 is dropped and re-created.
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
DATA = ROOT / "benchmarks" / "out" / "unisumeval-scale.jsonl"
PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
PG_BENCH = "postgres://postgres@127.0.0.1:5432/finegrain_bench"


def measure() -> dict:
    """Runs inside a child process whose DATABASE_URL points at a fresh database."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.core.management import call_command

    from corpus.importing import import_dataset
    from corpus.models import DocumentSentence, Project, SummarySentence

    call_command("migrate", verbosity=0)
    project = Project.objects.create(slug="bench", name="bench")
    data = DATA.read_bytes()
    started = time.perf_counter()
    first = import_dataset(project=project, data=data, filename=DATA.name)
    first_seconds = time.perf_counter() - started
    started = time.perf_counter()
    again = import_dataset(project=project, data=data, filename=DATA.name)
    again_seconds = time.perf_counter() - started
    return {
        "rows": first.rows, "documents": first.documents_created, "summaries": first.summaries_created,
        "document_sentences": DocumentSentence.objects.count(), "summary_sentences": SummarySentence.objects.count(),
        "import_seconds": round(first_seconds, 2), "reimport_seconds": round(again_seconds, 2),
        "reimport_changed": again.changed,
    }


def run_engine(engine: str) -> dict:
    env = dict(os.environ)
    env.pop("CELERY_BROKER_URL", None)
    if engine == "postgres":
        import psycopg

        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS finegrain_bench")
            conn.execute("CREATE DATABASE finegrain_bench")
        env["DATABASE_URL"] = PG_BENCH
    else:
        env["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite3"
    output = subprocess.run([sys.executable, "-m", "benchmarks.import_bench", "--child"], env=env, cwd=ROOT,
                            check=True, capture_output=True, text=True).stdout
    return {"engine": engine, **json.loads(output.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description="Import benchmark at UniSumEval scale")
    parser.add_argument("--engine", choices=["sqlite", "postgres"])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure()))
        return
    if not DATA.exists():
        from benchmarks.synthetic import write

        write(DATA)
    for engine in [args.engine] if args.engine else ["sqlite", "postgres"]:
        print(json.dumps(run_engine(engine)))


if __name__ == "__main__":
    main()
