"""The PostgreSQL backend's health check (config/postgresql): no query while the server is silent, a reconnect once
the server has ended the connection, before the request's first query can fail."""

import psycopg
import pytest
from django.db import connections

connection = connections["default"]

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def new_request():
    """What Django does around a request: the end of the last one, then the check before the first query."""
    connection.close_if_unusable_or_obsolete()
    connection.close_if_health_check_failed()


@pytest.fixture
def kept_connection(settings):
    connection.settings_dict["CONN_HEALTH_CHECKS"] = True
    connection.settings_dict["CONN_MAX_AGE"] = 60
    connection.close()
    yield
    connection.close()


def test_a_silent_connection_is_kept_without_a_query(kept_connection, monkeypatch):
    pid = backend_pid()
    checks = []
    monkeypatch.setattr(connection, "is_usable", lambda: checks.append("SELECT 1") or True)
    new_request()
    assert connection.health_check_enabled and connection.health_check_done
    assert checks == []
    assert backend_pid() == pid


def test_a_connection_the_server_ended_is_replaced_before_the_first_query(kept_connection):
    pid = backend_pid()
    params = connection.get_connection_params()
    with psycopg.connect(host=params.get("host"), port=params.get("port"), user=params.get("user"),
                         dbname=params["dbname"], autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
        # The server tells the client and closes the socket; wait until that has arrived.
        admin.execute("SELECT pg_sleep(0.2)")
    new_request()
    assert backend_pid() != pid  # reconnected, and the query ran without an error


def test_it_is_the_backend_in_use():
    from config.postgresql.base import DatabaseWrapper

    assert isinstance(connection, DatabaseWrapper)
