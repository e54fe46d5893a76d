"""deploy/compose.yaml: valid against the Compose Specification's JSON schema, and consistent with the settings.

The schema is vendored in tests/fixtures/compose-spec/ (see SOURCE.md there): no network at test time.
"""

import json
import re

import jsonschema
import pytest
import yaml
from django.conf import settings

from .conftest import DEPLOY, ROOT

SCHEMA = ROOT / "tests" / "fixtures" / "compose-spec" / "compose-spec.json"


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft201909Validator.check_schema(schema)
    return jsonschema.Draft201909Validator(schema)


def test_it_validates_against_the_compose_specification(compose, validator):
    errors = [f"{'/'.join(map(str, error.path))}: {error.message}" for error in validator.iter_errors(compose)]

    assert errors == []


def test_the_schema_rejects_what_compose_would(compose, validator):
    # The validation above is not vacuous: a misspelt key and a bad depends_on condition are caught.
    broken = json.loads(json.dumps(compose))
    broken["services"]["web"]["restrat"] = "always"
    broken["services"]["nginx"]["depends_on"]["web"]["condition"] = "service_ready"

    assert len(list(validator.iter_errors(broken))) == 2


def test_every_dependency_and_named_volume_exists(compose):
    services = compose["services"]
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown {dependency}"
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if not source.startswith((".", "/")):
                assert source in compose["volumes"], f"{name} mounts undeclared volume {source}"
            else:
                assert (DEPLOY / source).resolve().is_relative_to(DEPLOY), source
        for port in service.get("ports", []):
            assert re.fullmatch(r"\d+:\d+", port), port


def test_the_bind_mounted_files_exist(compose):
    assert (DEPLOY / "nginx" / "finegrain.conf").is_file()
    assert (DEPLOY / compose["x-app"]["build"]["dockerfile"].removeprefix("deploy/")).is_file()


def queues_of(service) -> list[str]:
    command = service["command"]
    return command[command.index("-Q") + 1].split(",")


def test_the_workers_consume_every_routed_queue_and_beat_runs_once(compose):
    services = compose["services"]
    workers = {name: queues_of(s) for name, s in services.items() if "worker" in s.get("command", [])}
    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()} | {settings.CELERY_TASK_DEFAULT_QUEUE}

    assert {queue for queues in workers.values() for queue in queues} == routed
    assert [name for name, s in services.items() if "beat" in s.get("command", [])] == ["beat"]


def test_the_app_containers_use_postgres_redis_and_the_static_volume(compose):
    environment = compose["x-app"]["environment"]
    assert environment["DATABASE_URL"].startswith("postgres://") and "@db:5432/" in environment["DATABASE_URL"]
    assert environment["CELERY_BROKER_URL"].startswith("redis://redis:6379/")
    assert environment["CACHE_URL"].startswith("redis://redis:6379/")
    assert environment["CACHE_URL"] != environment["CELERY_BROKER_URL"]
    assert compose["services"]["db"]["image"] == "postgres:15"
    assert compose["services"]["redis"]["image"] == "redis:7"
    static = "static:" + environment["STATIC_ROOT"]
    assert static in compose["services"]["setup"]["volumes"]
    assert static + ":ro" in compose["services"]["nginx"]["volumes"]
    assert compose["services"]["nginx"]["environment"]["NGINX_STATIC_ROOT"] == environment["STATIC_ROOT"] + "/"


def test_the_image_pins_the_same_torch_as_pyproject():
    pyproject_pin = re.search(r'"torch==([^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    dockerfile = (DEPLOY / "Dockerfile").read_text()

    assert dockerfile.startswith("#") and "\nFROM python:3.11-slim\n" in dockerfile
    assert f"torch=={pyproject_pin}" in dockerfile and "download.pytorch.org/whl/cpu" in dockerfile
