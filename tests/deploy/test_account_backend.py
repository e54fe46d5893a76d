"""The account backend (config/login.py): every request's user read through SQL built once, the same log-in rules
as Django's ModelBackend, and the sessions made under ModelBackend still logged in."""

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, authenticate
from django.contrib.auth.signals import user_login_failed
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_hashes(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # Speed, not security, here.


def log_in_as(client, user, backend: str):
    session = client.session
    session[SESSION_KEY], session[BACKEND_SESSION_KEY] = str(user.pk), backend
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    client.cookies["sessionid"] = session.session_key


@pytest.mark.parametrize("backend", ["config.login.AccountBackend", "django.contrib.auth.backends.ModelBackend"])
def test_it_reads_the_user_of_a_session_made_by_either_backend(client, annotator, backend):
    log_in_as(client, annotator, backend)

    response = client.get(reverse("work_home"))

    assert response.status_code == 200
    assert response.wsgi_request.user == annotator


def test_it_logs_out_a_deactivated_account_and_a_changed_password(client, annotator):
    log_in_as(client, annotator, "config.login.AccountBackend")
    annotator.set_password("another-password-2")
    annotator.save()
    assert not client.get(reverse("work_home")).wsgi_request.user.is_authenticated

    log_in_as(client, annotator, "config.login.AccountBackend")
    annotator.is_active = False
    annotator.save()
    assert not client.get(reverse("work_home")).wsgi_request.user.is_authenticated


def test_it_checks_a_wrong_password_once_and_reports_the_failure(annotator, monkeypatch):
    checks, failures = [], []
    check_password = type(annotator).check_password
    monkeypatch.setattr(type(annotator), "check_password",
                        lambda self, raw: checks.append(raw) or check_password(self, raw))
    user_login_failed.connect(receiver := lambda **kwargs: failures.append(kwargs["credentials"]["username"]))
    try:
        assert authenticate(username="ann", password="wrong") is None
    finally:
        user_login_failed.disconnect(receiver)

    assert checks == ["wrong"]
    assert failures == ["ann"]
    assert authenticate(username="ann", password="pw-annotator-1") == annotator
