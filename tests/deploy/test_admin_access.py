"""The admin is for staff accounts only (Django's default, kept)."""

import pytest

pytestmark = pytest.mark.django_db


def test_it_sends_anonymous_visitors_to_the_admin_login(client):
    response = client.get("/admin/")

    assert response.status_code == 302 and response.url.startswith("/admin/login/")


def test_it_refuses_an_annotator(client, annotator):
    client.force_login(annotator)

    response = client.get("/admin/")

    assert response.status_code == 302 and response.url.startswith("/admin/login/")


def test_it_refuses_an_annotators_password_on_the_admin_login(client, annotator, locmem_cache):
    response = client.post("/admin/login/", {"username": "ann", "password": "pw-annotator-1"})

    assert response.status_code == 200
    assert "staff account" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_it_opens_for_a_staff_manager(client, manager):
    client.force_login(manager)

    assert client.get("/admin/").status_code == 200
