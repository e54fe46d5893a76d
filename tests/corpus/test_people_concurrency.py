"""Two managers changing each other's membership at the same moment, on PostgreSQL (CI): the changes take turns under
the project's lock, so neither fails with a deadlock and the project always keeps a manager. A deadlock with a lock
taken elsewhere is retried, not shown as an error."""

import psycopg
import pytest
from django.db import OperationalError

from corpus import people
from corpus.models import Membership, Project
from tests.work import race

ROUNDS = 20


def demote(pair):
    actor, target = pair
    try:
        people.change_role(membership=target, role=Membership.Role.ANNOTATOR, actor=actor.user)
    except people.PeopleError:
        return "refused"
    return "done"


def remove(pair):
    actor, target = pair
    try:
        people.remove(membership=target, actor=actor.user)
    except people.PeopleError:
        return "refused"
    return "done"


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("change", [demote, remove], ids=["demote", "remove"])
def test_two_managers_changing_each_other_at_once_take_turns_and_keep_a_manager(change, django_user_model):
    project = Project.objects.create(slug="duel", name="Duel")
    users = [django_user_model.objects.create_user(name) for name in ("ada", "bob")]
    for _ in range(ROUNDS):
        first, second = (Membership.objects.update_or_create(project=project, user=user,
                                                             defaults={"role": Membership.Role.MANAGER})[0]
                         for user in users)

        outcomes = race(change, [(first, second), (second, first)], timeout=60)

        # The one that came second found a single manager left, who was itself.
        assert sorted(outcomes) == ["done", "refused"]
        assert project.memberships.filter(role=Membership.Role.MANAGER).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_change_that_postgresql_gave_up_to_break_a_deadlock_is_made_again(monkeypatch, project, manager, annotator):
    record, attempts = people._record, []

    def deadlocked_once(*args):
        attempts.append(args)
        if len(attempts) == 1:
            raise OperationalError("deadlock detected") from psycopg.errors.DeadlockDetected("deadlock detected")
        record(*args)

    monkeypatch.setattr(people, "_record", deadlocked_once)
    membership = Membership.objects.get(user=annotator)

    people.change_role(membership=membership, role=Membership.Role.REVIEWER, actor=manager)

    assert len(attempts) == 2
    assert Membership.objects.get(pk=membership.pk).role == Membership.Role.REVIEWER
    assert project.membership_events.count() == 1
