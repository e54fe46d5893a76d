"""Sessions in the database, the embedded default (config/sessions.py): read as Django's db engine reads them."""

from datetime import timedelta

import pytest
from django.contrib.sessions.models import Session
from django.urls import reverse
from django.utils import timezone

from config.sessions import SessionStore

pytestmark = pytest.mark.django_db


def test_it_reads_back_a_saved_session_and_nothing_for_an_unknown_key():
    session = SessionStore()
    session["answer"] = 42
    session.create()

    assert SessionStore(session.session_key)["answer"] == 42
    unknown = SessionStore("x" * 32)
    assert unknown.get("answer") is None and unknown.session_key is None


def test_an_expired_session_is_no_session():
    session = SessionStore()
    session["answer"] = 42
    session.create()
    Session.objects.filter(session_key=session.session_key).update(expire_date=timezone.now() - timedelta(seconds=1))

    assert SessionStore(session.session_key).get("answer") is None


def test_a_log_in_lasts_across_requests(client, settings, annotator):
    settings.SESSION_ENGINE = "config.sessions"
    client.force_login(annotator)

    assert client.get(reverse("work_home")).wsgi_request.user == annotator
