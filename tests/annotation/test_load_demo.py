"""`load_demo`: the demo project and its accounts, and running it again changes nobody's password or role."""

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from corpus.models import Membership, Project

pytestmark = pytest.mark.django_db


def load(*args) -> str:
    out = StringIO()
    call_command("load_demo", "--no-assist", *args, stdout=out, verbosity=0)
    return out.getvalue()


def test_it_creates_the_demo_accounts_with_the_password_given():
    text = load("--password", "pw-first-run")
    project = Project.objects.get(slug="demo")
    assert authenticate(username="manager", password="pw-first-run").is_staff
    assert not authenticate(username="annotator", password="pw-first-run").is_staff
    roles = dict(project.memberships.values_list("user__username", "role"))
    assert roles == {"manager": Membership.Role.MANAGER, "annotator": Membership.Role.ANNOTATOR}
    assert "with the password 'pw-first-run'" in text


def test_running_it_again_keeps_every_password_and_role(django_user_model):
    load("--password", "pw-first-run")
    manager = django_user_model.objects.get(username="manager")
    manager.set_password("changed-by-the-manager")
    manager.save()
    project = Project.objects.get(slug="demo")
    project.memberships.filter(user__username="annotator").update(role=Membership.Role.MANAGER)

    text = load()  # the default password this time
    assert authenticate(username="manager", password="changed-by-the-manager") is not None
    assert authenticate(username="manager", password="finegrain-demo") is None
    assert authenticate(username="annotator", password="pw-first-run") is not None
    assert project.memberships.get(user__username="annotator").role == Membership.Role.MANAGER
    assert "Existing accounts keep their passwords: manager, annotator." in text
    assert "finegrain-demo" not in text
    assert Project.objects.filter(slug="demo").count() == 1
