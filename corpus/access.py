"""Who sees a project, and with which role. The ground floor of access: annotation.permissions builds the rules about
the work on it, and every page and API view asks one of the two.

A user who is not a member of a project gets a 404, so project slugs do not leak; a member without the needed
role gets a 403.
"""

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from .models import Membership, Project


def projects_visible_to(user) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user).distinct()


def role_in(project: Project, user) -> str | None:
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return Membership.Role.MANAGER
    return project.role_of(user)


def get_project(user, slug: str, *, role: str | tuple[str, ...] | None = None) -> Project:
    """The project if `user` is a member (with `role`, or one of the roles, when given); 404 for outsiders, 403 for
    the wrong role."""
    try:
        project = Project.objects.get(slug=slug)
    except Project.DoesNotExist:
        raise Http404("No such project") from None
    user_role = role_in(project, user)
    if user_role is None:
        raise Http404("No such project")
    roles = (role,) if isinstance(role, str) else role
    if roles is not None and user_role not in roles:
        raise PermissionDenied(f"This needs the {' or '.join(roles)} role in {project.name}.")
    return project


def get_managed_project(user, slug: str) -> Project:
    return get_project(user, slug, role=Membership.Role.MANAGER)


def get_reviewed_project(user, slug: str) -> Project:
    """Reading the labels of a project (its HITs with every annotator's answers): its managers and reviewers."""
    return get_project(user, slug, role=(Membership.Role.MANAGER, Membership.Role.REVIEWER))


def can_manage(user) -> bool:
    """May create new projects: accounts with Django's `corpus.add_project` permission (superusers have them all).
    Not staff status, which is the Django admin's business (config/admin.py)."""
    return user.has_perm("corpus.add_project")
