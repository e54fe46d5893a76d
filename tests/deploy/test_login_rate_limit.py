"""Failed log-ins are limited per client address and per username (config/login.py); successes never count."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_limits(settings, locmem_cache):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # Speed, not security, here.
    settings.FINEGRAIN_LOGIN_FAILURES_PER_IP = "5/15m"
    settings.FINEGRAIN_LOGIN_FAILURES_PER_USERNAME = "3/15m"


def log_in(client, username, password, **extra):
    return client.post(reverse("login"), {"username": username, "password": password}, **extra)


def test_it_refuses_a_username_after_three_failures_even_with_the_right_password(client, annotator):
    for attempt in range(3):
        assert log_in(client, "ann", f"wrong-{attempt}").status_code == 200

    response = log_in(client, "ann", "pw-annotator-1")

    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "Too many failed log-ins" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_it_counts_spelling_variants_of_a_username_together(client, annotator):
    for username in ("ann", "ANN", " Ann "):
        log_in(client, username, "wrong")

    assert log_in(client, "ann", "pw-annotator-1").status_code == 429


def test_it_refuses_an_address_after_five_failures_across_usernames(client, annotator):
    for attempt in range(5):
        assert log_in(client, f"guess-{attempt}", "wrong").status_code == 200

    assert log_in(client, "ann", "pw-annotator-1").status_code == 429
    # Another address is not affected.
    assert log_in(client, "ann", "pw-annotator-1", REMOTE_ADDR="192.0.2.7").status_code == 302


def test_it_never_counts_successful_log_ins(client, annotator):
    # A team logging in from one office address: more successes than either limit allows failures.
    for _ in range(8):
        assert log_in(client, "ann", "pw-annotator-1").status_code == 302
        client.logout()


def test_it_keeps_showing_the_form(client, annotator):
    for attempt in range(5):
        log_in(client, "ann", f"wrong-{attempt}")

    assert client.get(reverse("login")).status_code == 200


def test_it_trusts_x_real_ip_only_behind_the_proxy(client, annotator, settings):
    # Without the proxy, a client cannot escape the address limit by inventing X-Real-IP headers.
    for attempt in range(5):
        log_in(client, f"guess-{attempt}", "wrong", HTTP_X_REAL_IP=f"198.51.100.{attempt}")
    assert log_in(client, "nobody", "wrong", HTTP_X_REAL_IP="198.51.100.99").status_code == 429

    # Behind nginx, which overwrites X-Real-IP, the header is the client's address.
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    for attempt in range(5):
        log_in(client, f"other-{attempt}", "wrong", HTTP_X_REAL_IP="203.0.113.1")
    assert log_in(client, "someone", "wrong", HTTP_X_REAL_IP="203.0.113.1").status_code == 429
    assert log_in(client, "someone", "wrong", HTTP_X_REAL_IP="203.0.113.2").status_code == 200


def test_it_limits_the_admin_login_too(client, manager):
    for attempt in range(3):
        assert client.post("/admin/login/", {"username": "mia", "password": f"wrong-{attempt}"}).status_code == 200

    response = client.post("/admin/login/", {"username": "mia", "password": "pw-manager-1"})

    assert response.status_code == 429
