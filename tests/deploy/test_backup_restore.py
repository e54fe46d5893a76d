"""The operations guide's backup and restore, for real: dump, drop, restore, and the same export (CI)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL_JSONL = ROOT / "tests" / "fixtures" / "import" / "small.jsonl"
DATABASE = "finegrain_backup_test"
ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"


def admin(sql: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as connection:
        connection.execute(sql)


def manage(*args: str) -> None:
    env = dict(os.environ, DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{DATABASE}")
    env.pop("CELERY_BROKER_URL", None)  # tasks in-process: this test is about the database
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True,
                   timeout=600)


@pytest.mark.services
def test_a_dump_restored_into_a_dropped_database_gives_the_same_export(tmp_path):
    pg_dump, pg_restore = shutil.which("pg_dump"), shutil.which("pg_restore")
    assert pg_dump and pg_restore, "PostgreSQL client tools are part of the machine (Debian postgresql-client)"
    admin(f"DROP DATABASE IF EXISTS {DATABASE}")
    admin(f"CREATE DATABASE {DATABASE}")
    try:
        manage("migrate", "--no-input")
        manage("import_dataset", str(SMALL_JSONL), "--project", "backup")
        manage("simulate_annotations", "--project", "backup", "--annotators", "3", "--accuracy", "0.9", "--seed", "1")
        manage("export_benchmark", "--project", "backup", "--out", str(tmp_path / "before.jsonl"), "--format", "jsonl",
               "--annotator-labels")

        dump = tmp_path / "finegrain.dump"
        subprocess.run([pg_dump, "-h", "127.0.0.1", "-U", "postgres", "-Fc", "-f", str(dump), DATABASE], check=True,
                       timeout=300)
        admin(f"DROP DATABASE {DATABASE}")
        admin(f"CREATE DATABASE {DATABASE}")
        subprocess.run([pg_restore, "-h", "127.0.0.1", "-U", "postgres", "--no-owner", "-d", DATABASE, str(dump)],
                       check=True, timeout=300)
        manage("export_benchmark", "--project", "backup", "--out", str(tmp_path / "after.jsonl"), "--format", "jsonl",
               "--annotator-labels")
    finally:
        admin(f"DROP DATABASE IF EXISTS {DATABASE}")

    before = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("before"))
    assert before, "the export wrote nothing"
    for name in before:
        after = tmp_path / name.replace("before", "after", 1)
        assert after.read_bytes() == (tmp_path / name).read_bytes(), name
    assert (tmp_path / "before.jsonl").read_text().count("\n") == 4  # four summaries in the fixture
