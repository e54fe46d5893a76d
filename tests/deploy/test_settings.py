"""config/settings.py reads the environment and nothing else: importing it writes nothing to the disk (Django's
start makes the folders the laptop defaults need), and the AI-assistance defaults come from assist.config, the one
place they are written."""

import dataclasses
import json
import subprocess
import sys

from assist.config import BackendConfig, setting_name

from .conftest import ROOT, clean_env, run_manage


def python(code: str, **variables: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean_env(**variables), capture_output=True,
                          text=True, timeout=120)


def test_it_writes_nothing_when_settings_are_imported(tmp_path):
    data = tmp_path / "var"

    result = python("import config.settings", FINEGRAIN_DATA_DIR=str(data))

    assert result.returncode == 0, result.stderr
    assert not data.exists()


def test_django_start_makes_the_folders_a_fresh_checkout_needs(tmp_path):
    data = tmp_path / "var"

    result = run_manage("migrate", "--no-input", env={"FINEGRAIN_DATA_DIR": str(data)}, timeout=300)

    assert result.returncode == 0, result.stderr[-3000:]
    assert (data / "finegrain.sqlite3").is_file()
    assert (data / "broker" / "messages").is_dir() and (data / "broker" / "control").is_dir()
    assert (data / "static").is_dir()


def test_production_folders_are_left_to_the_operator(tmp_path):
    """With a broker URL and STATIC_ROOT set, Django's start makes only the SQLite folder it was pointed at."""
    data, static = tmp_path / "var", tmp_path / "collected"

    result = python("import django; django.setup()", FINEGRAIN_DATA_DIR=str(data), STATIC_ROOT=str(static),
                    CELERY_BROKER_URL="redis://127.0.0.1:9/0", DATABASE_URL="postgres://nobody@127.0.0.1:9/none")

    assert result.returncode == 0, result.stderr
    assert not data.exists() and not static.exists()


def test_the_assist_settings_take_their_defaults_from_assist_config(tmp_path):
    names = {field.name: setting_name(field.name) for field in dataclasses.fields(BackendConfig)}
    code = ("import json, django; django.setup(); from django.conf import settings; "
            f"print(json.dumps({{name: getattr(settings, name) for name in {sorted(names.values())!r}}}))")

    result = python(code, FINEGRAIN_DATA_DIR=str(tmp_path))

    assert result.returncode == 0, result.stderr
    settings = json.loads(result.stdout.strip().splitlines()[-1])
    defaults = dataclasses.asdict(BackendConfig())
    for field, name in names.items():
        value = tuple(settings[name]) if isinstance(defaults[field], tuple) else settings[name]
        assert value == defaults[field], name
