"""The password an account made on the spot must choose at its first log-in: never the one-time password the manager
was shown, and one that Django's password validators accept."""

import pytest
from django.urls import reverse

from corpus.models import PasswordChangeRequired
from corpus.people import create_account

pytestmark = pytest.mark.django_db

UNCHANGED = "Your new password must be different from your old one."


@pytest.fixture
def one_time_password(client, project, manager):
    """A new annotator, logged in with the one-time password the manager was shown."""
    _, password = create_account(project=project, username="bea", role="annotator", actor=manager)
    assert client.post(reverse("login"), {"username": "bea", "password": password}).status_code == 302
    return password


def change_password(client, old: str | None, new: str):
    """The form as a person fills it in: the current password only where the page asks for it."""
    data = {"new_password1": new, "new_password2": new}
    if old is not None:
        data["old_password"] = old
    return client.post(reverse("password_change"), data)


def test_it_refuses_the_one_time_password_as_the_new_one(client, one_time_password):
    response = change_password(client, None, one_time_password)

    assert response.status_code == 200 and UNCHANGED in response.content.decode()
    assert PasswordChangeRequired.objects.filter(user__username="bea").exists()
    assert client.get(reverse("work_home")).url == reverse("password_change")


@pytest.mark.parametrize("new, message", [
    ("x7-shrt", "This password is too short."),
    ("password123", "This password is too common."),
    ("8149263715", "This password is entirely numeric."),
])
def test_it_applies_the_password_validators(client, one_time_password, new, message):
    response = change_password(client, None, new)

    assert response.status_code == 200 and message in response.content.decode()
    assert PasswordChangeRequired.objects.filter(user__username="bea").exists()


def test_a_password_of_ones_own_ends_the_one_time_password(client, one_time_password):
    response = change_password(client, None, "bea-own-pass-77")

    assert response.status_code == 302 and not PasswordChangeRequired.objects.exists()
    client.logout()
    assert not client.login(username="bea", password=one_time_password)
    assert client.login(username="bea", password="bea-own-pass-77")


def test_the_first_log_in_does_not_ask_again_for_the_one_time_password(client, one_time_password):
    page = client.get(reverse("password_change")).content.decode()

    assert 'name="old_password"' not in page and 'name="new_password1"' in page


def test_a_later_change_asks_for_the_current_password(client, annotator):
    client.force_login(annotator)
    assert 'name="old_password"' in client.get(reverse("password_change")).content.decode()

    response = change_password(client, "not-my-password", "a-new-pass-phrase-5")

    assert response.status_code == 200 and "Your old password was entered incorrectly" in response.content.decode()
    assert change_password(client, "pw-annotator-1", "a-new-pass-phrase-5").status_code == 302


def test_no_change_of_password_keeps_the_old_one(client, annotator):
    client.force_login(annotator)

    response = change_password(client, "pw-annotator-1", "pw-annotator-1")

    assert response.status_code == 200 and UNCHANGED in response.content.decode()
