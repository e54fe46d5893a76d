"""GET /health/: per-check status, 503 on any failure, nothing secret in the answer."""

import pytest
from django.db import OperationalError
from django.urls import reverse

from config import health

pytestmark = pytest.mark.django_db


def test_it_reports_every_check_ok(client, settings):
    response = client.get(reverse("health"))

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"] == {"status": "ok"}
    expected_mode = "redis" if settings.CELERY_BROKER_URL.startswith("redis") else "embedded"
    assert body["checks"]["broker"] == {"status": "ok", "mode": expected_mode}
    model = body["checks"]["embedding_model"]
    assert model["status"] == "ok" and model["source"] == "bundled"
    assert model["loaded_in_this_process"] in (True, False)
    assert response["Cache-Control"].startswith("max-age=0")


def test_it_answers_503_without_the_error_text_when_the_database_fails(client, monkeypatch):
    def broken():
        raise OperationalError('connection to server at "db.internal" failed: password=hunter2')

    monkeypatch.setitem(health.CHECKS, "database", broken)

    response = client.get(reverse("health"))

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "fail"
    assert body["checks"]["database"] == {"status": "fail", "error": "OperationalError"}
    assert b"hunter2" not in response.content and b"db.internal" not in response.content


def test_it_answers_503_without_the_url_when_the_broker_is_unreachable(client, settings):
    settings.CELERY_BROKER_URL = "redis://:s3cret-pass@127.0.0.1:1/0"  # Nothing listens on port 1.

    response = client.get(reverse("health"))

    assert response.status_code == 503
    assert response.json()["checks"]["broker"]["status"] == "fail"
    assert b"s3cret-pass" not in response.content and b"127.0.0.1" not in response.content


def test_it_answers_503_without_the_path_when_the_model_directory_is_empty(client, settings, tmp_path):
    settings.FINEGRAIN_EMBEDDING_MODEL = str(tmp_path)

    response = client.get(reverse("health"))

    assert response.status_code == 503
    model = response.json()["checks"]["embedding_model"]
    assert model["status"] == "fail" and model["source"] == "FINEGRAIN_EMBEDDING_MODEL"
    assert str(tmp_path).encode() not in response.content


def test_it_refuses_weights_that_are_only_a_pointer(client, settings, tmp_path):
    (tmp_path / "modules.json").write_text("[]")
    (tmp_path / "model.safetensors").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n")
    settings.FINEGRAIN_EMBEDDING_MODEL = str(tmp_path)

    response = client.get(reverse("health"))

    assert response.status_code == 503
    assert response.json()["checks"]["embedding_model"]["error"] == "weights file is too small to be a model"


@pytest.mark.slow
def test_it_reports_a_model_this_process_has_loaded(client):
    embeddings = pytest.importorskip("assist.embeddings")
    embeddings.load_model()

    response = client.get(reverse("health"))

    assert response.json()["checks"]["embedding_model"]["loaded_in_this_process"] is True


def test_it_is_read_only(client):
    assert client.post(reverse("health")).status_code == 405
    assert client.head(reverse("health")).status_code == 200


def test_it_is_not_redirected_to_https_but_pages_are(client, settings):
    settings.SECURE_SSL_REDIRECT = True

    assert client.get(reverse("health")).status_code == 200
    response = client.get(reverse("login"))
    assert response.status_code == 301 and response.url.startswith("https://")
