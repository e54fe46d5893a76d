"""The test database is emptied with DELETE instead of TRUNCATE after a transactional test (`flush_by_delete` in
tests/conftest.py): that holds only while every foreign key is checked at the commit and Django's flush still asks
the backend for its SQL, which an upgrade of either could change."""

import pytest
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection

from corpus.models import Membership, Project

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's flush is a DELETE already")


def test_every_foreign_key_is_checked_at_the_commit():
    with connection.cursor() as cursor:
        cursor.execute("SELECT conrelid::regclass::text, conname FROM pg_constraint WHERE contype = 'f' "
                       "AND NOT (condeferrable AND condeferred)")
        assert cursor.fetchall() == []


def test_flush_deletes_rows_that_refer_to_each_other(django_user_model):
    assert [statement.split()[:2] for statement in connection.ops.sql_flush(no_style(), ["corpus_project"])] == [
        ["DELETE", "FROM"]]
    user = django_user_model.objects.create_user("flushed")
    Membership.objects.create(project=Project.objects.create(slug="flushed", name="Flushed"), user=user,
                              role=Membership.Role.MANAGER)
    call_command("flush", interactive=False, inhibit_post_migrate=True, verbosity=0)
    assert not (Project.objects.exists() or Membership.objects.exists() or django_user_model.objects.exists())
