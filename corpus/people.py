"""A project's people: inviting them with a role, creating an account on the spot, changing roles, removing them;
every change recorded (MembershipEvent). The rules about what a role may do live in corpus.access and
annotation.permissions; these are the writes.

A project always keeps a manager: the last one can be neither removed nor given another role.

Lock order: every change to a project's memberships first takes the project's row (NO KEY: rows that merely point at
the project are not held up), then the rows it changes. Changes to one project's people so take turns, and two
managers demoting each other at once cannot deadlock: the second waits for the first, then counts the managers left.
"""

import hashlib
import secrets
from datetime import timedelta
from functools import wraps

import psycopg
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, OperationalError, transaction
from django.utils import timezone

from .models import Invitation, Membership, MembershipEvent, PasswordChangeRequired, Project

INVITATION_DAYS = 14
ATTEMPTS_ON_DEADLOCK = 3


class PeopleError(Exception):
    """A change to a project's people that cannot be made; the message says why."""


def _retried_on_deadlock(service):
    """Run `service` again when PostgreSQL gave up its transaction to break a deadlock (or a serialization failure):
    the lock order above leaves none among these services, but a lock taken elsewhere must not become a 500. Only
    as its own transaction: inside a caller's, the whole of the caller's work is lost and is the caller's to redo."""

    @wraps(service)
    def wrapped(**kwargs):
        for attempt in range(1, ATTEMPTS_ON_DEADLOCK + 1):
            try:
                return service(**kwargs)
            except OperationalError as error:
                retryable = isinstance(error.__cause__, (psycopg.errors.DeadlockDetected,
                                                         psycopg.errors.SerializationFailure))
                if not retryable or attempt == ATTEMPTS_ON_DEADLOCK or transaction.get_connection().in_atomic_block:
                    raise

    return wrapped


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def invite(*, project: Project, role: str, label: str, actor, days: int = INVITATION_DAYS) -> tuple[Invitation, str]:
    """A new invitation and its token (shown once, never stored)."""
    _check_role(role)
    label = label.strip()
    if not label or len(label) > 200:
        raise PeopleError("Say who the invitation is for, in 1 to 200 characters.")
    token = secrets.token_urlsafe(24)
    with transaction.atomic():
        invitation = Invitation.objects.create(project=project, role=role, label=label, token_sha256=_hash(token),
                                               created_by=actor, expires_at=timezone.now() + timedelta(days=days))
        _record(project, actor, MembershipEvent.Action.INVITED, label, f"as {Membership.Role(role).label.lower()}")
    return invitation, token


def open_invitation(token: str) -> Invitation | None:
    """The unused, unexpired, unrevoked invitation of this token, or None."""
    invitation = (Invitation.objects.select_related("project").filter(token_sha256=_hash(token or "")).first())
    if invitation is None or invitation.used_at or invitation.revoked_at or invitation.expires_at <= timezone.now():
        return None
    return invitation


def accept(*, token: str, user) -> Membership:
    """Make `user` a member with the invitation's role; an invitation is used once. A member already keeps their
    role (a manager changes it), so a member's joining again is refused."""
    with transaction.atomic():
        invitation = open_invitation(token)
        if invitation is None:
            raise PeopleError("This invitation is not valid: it was used, revoked or has expired. Ask the project's "
                              "manager for a new one.")
        _lock_project(invitation.project_id)
        invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
        if invitation.used_at:
            raise PeopleError("This invitation has just been used.")
        if Membership.objects.filter(project=invitation.project, user=user).exists():
            raise PeopleError(f"You are already a member of {invitation.project.name}.")
        membership = Membership.objects.create(project=invitation.project, user=user, role=invitation.role)
        invitation.used_at, invitation.used_by = timezone.now(), user
        invitation.save(update_fields=["used_at", "used_by"])
        _record(invitation.project, user, MembershipEvent.Action.JOINED, user.get_username(),
                f"as {membership.get_role_display().lower()} ({invitation.label})")
    return membership


@_retried_on_deadlock
def create_account(*, project: Project, username: str, role: str, actor) -> tuple[Membership, str]:
    """A new account, member with `role`, and its one-time password (shown once); its owner chooses their own
    password at the first log-in."""
    _check_role(role)
    User = get_user_model()
    username = username.strip()
    field = User._meta.get_field(User.USERNAME_FIELD)
    try:
        field.run_validators(username)
    except ValidationError:
        raise PeopleError("A username is 1 to 150 letters, digits and @ . + - _") from None
    if not username or len(username) > 150:
        raise PeopleError("A username is 1 to 150 letters, digits and @ . + - _")
    password = secrets.token_urlsafe(12)
    try:
        with transaction.atomic():
            _lock_project(project.pk)
            user = User.objects.create_user(username=username, password=password)
            PasswordChangeRequired.objects.create(user=user)
            membership = Membership.objects.create(project=project, user=user, role=role)
            _record(project, actor, MembershipEvent.Action.ACCOUNT_CREATED, username,
                    f"as {membership.get_role_display().lower()}")
    except IntegrityError:
        raise PeopleError(f"The username '{username}' is taken; invite that person instead, or choose another "
                          "name.") from None
    return membership, password


@_retried_on_deadlock
def change_role(*, membership: Membership, role: str, actor) -> Membership:
    _check_role(role)
    with transaction.atomic():
        membership = _locked(membership)
        if membership.role == role:
            return membership
        _keep_a_manager(membership)
        before = membership.get_role_display().lower()
        membership.role = role
        membership.save(update_fields=["role"])
        _record(membership.project, actor, MembershipEvent.Action.ROLE_CHANGED, membership.user.get_username(),
                f"from {before} to {membership.get_role_display().lower()}")
    return membership


@_retried_on_deadlock
def remove(*, membership: Membership, actor) -> None:
    """The person leaves the project; what they did in it (labels, decisions) stays, under their pseudonym."""
    with transaction.atomic():
        membership = _locked(membership)
        _keep_a_manager(membership)
        membership.delete()
        _record(membership.project, actor, MembershipEvent.Action.REMOVED, membership.user.get_username(),
                f"was {membership.get_role_display().lower()}")


def revoke(*, invitation: Invitation, actor) -> None:
    with transaction.atomic():
        updated = Invitation.objects.filter(pk=invitation.pk, used_at__isnull=True, revoked_at__isnull=True).update(
            revoked_at=timezone.now())
        if updated:
            _record(invitation.project, actor, MembershipEvent.Action.REVOKED, invitation.label, "")


def _lock_project(project_id: int) -> None:
    Project.objects.select_for_update(no_key=True).filter(pk=project_id).values_list("pk", flat=True).first()


def _locked(membership: Membership) -> Membership:
    """The membership as it is now, locked after its project's row (the lock order above)."""
    _lock_project(membership.project_id)
    return (Membership.objects.select_for_update(of=("self",)).select_related("user", "project")
            .get(pk=membership.pk))


def _keep_a_manager(membership: Membership) -> None:
    """Called under the project's lock: no other change to its people can come between the count and the change."""
    if membership.role != Membership.Role.MANAGER:
        return
    if Membership.objects.filter(project=membership.project, role=Membership.Role.MANAGER).count() <= 1:
        raise PeopleError("A project needs a manager: make someone else manager first.")


def _check_role(role: str) -> None:
    if role not in Membership.Role.values:
        labels = [label.lower() for label in Membership.Role.labels]
        raise PeopleError(f"Choose a role: {', '.join(labels[:-1])} or {labels[-1]}.")


def _record(project: Project, actor, action: str, subject: str, detail: str) -> None:
    MembershipEvent.objects.create(project=project, actor=actor if getattr(actor, "pk", None) else None,
                                   action=action, subject=subject[:200], detail=detail[:200])
