"""Who may see what. Every page and API view asks these functions; nothing else decides access.

A user who is not a member of a project gets a 404, so project slugs do not leak; a member without the needed
role gets a 403.
"""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404

from .models import Annotator, Assignment, Hit, Label, Membership, Project, Unit


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


def get_project(user, slug: str, *, role: str | None = None) -> Project:
    """The project if `user` is a member (with `role`, when given); 404 for outsiders, 403 for the wrong role."""
    try:
        project = Project.objects.get(slug=slug)
    except Project.DoesNotExist:
        raise Http404("No such project") from None
    user_role = role_in(project, user)
    if user_role is None:
        raise Http404("No such project")
    if role is not None and user_role != role:
        raise PermissionDenied(f"This needs the {role} role in {project.name}.")
    return project


def get_managed_project(user, slug: str) -> Project:
    return get_project(user, slug, role=Membership.Role.MANAGER)


def get_managed_hit(user, slug: str, public_id) -> Hit:
    """A HIT of a project `user` manages; 404 for anybody else."""
    project = get_managed_project(user, slug)
    hit = (Hit.objects.select_related("project", "document", "summary")
           .filter(project=project, public_id=public_id).first())
    if hit is None:
        raise Http404("No such HIT")
    return hit


def can_manage(user) -> bool:
    """May create new projects: staff accounts (managers are made staff by `load_demo` and the ops guide)."""
    return user.is_authenticated and (user.is_staff or user.is_superuser)


# --- Annotation work. Pages and API views take the annotator from `current_annotator` and nothing else, so that a
# session-bound identity (a private link, a crowd worker arriving from MTurk or Prolific) can plug in here later.

def current_annotator(request) -> Annotator | None:
    """The annotator this request works as: today the logged-in account, its Annotator row made on first use."""
    if hasattr(request, "_finegrain_annotator"):
        return request._finegrain_annotator
    annotator = None
    # --- crowd hook (issue #7): a signed crowd/link session token wins over the log-in; see annotation/crowd.
    from .crowd.tokens import session_of

    if (session := session_of(request)) is not None:
        request._finegrain_annotator = session.annotator
        return session.annotator
    # --- end crowd hook
    user = request.user
    if user.is_authenticated:
        try:
            annotator = Annotator.objects.get(user=user)
        except Annotator.DoesNotExist:
            annotator = None
        if annotator is None:
            annotator, _ = Annotator.objects.get_or_create(
                provider=Annotator.Provider.ACCOUNT, external_id=str(user.pk), defaults={"user": user}
            )
    request._finegrain_annotator = annotator
    return annotator


def annotator_required(view):
    """Page views for annotators: anonymous visitors are sent to log in; `request.annotator` is set."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        annotator = current_annotator(request)
        if annotator is None:
            return redirect_to_login(request.get_full_path())
        request.annotator = annotator
        return view(request, *args, **kwargs)

    return wrapper


def may_work_in(annotator: Annotator, project: Project) -> bool:
    """Accounts work in projects where they hold the annotator role; blocked or paused annotators nowhere."""
    if not annotator.may_work:
        return False
    if annotator.provider == Annotator.Provider.ACCOUNT:
        return annotator.user_id is not None and project.memberships.filter(
            user_id=annotator.user_id, role=Membership.Role.ANNOTATOR).exists()
    # --- crowd hook (issue #7)
    from .crowd.tokens import crowd_may_work

    return crowd_may_work(annotator, project)
    # --- end crowd hook


def work_projects(annotator: Annotator) -> QuerySet[Project]:
    if annotator.provider == Annotator.Provider.ACCOUNT and annotator.user is not None:
        return Project.objects.filter(memberships__user=annotator.user,
                                      memberships__role=Membership.Role.ANNOTATOR).distinct()
    return Project.objects.none()


def get_work_project(request, slug: str) -> Project:
    """The project the current annotator works in: 404 for strangers, 403 for members who do not annotate."""
    annotator = current_annotator(request)
    project = Project.objects.filter(slug=slug).first()
    if project is None or annotator is None:
        raise Http404("No such project")
    if not may_work_in(annotator, project):
        if annotator.user is not None and role_in(project, annotator.user) is not None and annotator.may_work:
            raise PermissionDenied("Only the project's annotators take HITs; managers see them on the HIT pages.")
        if not annotator.may_work:
            raise PermissionDenied(f"Your annotator account is {annotator.get_status_display().lower()}.")
        raise Http404("No such project")
    return project


def get_own_assignment(request, public_id, *, with_document: bool = True) -> Assignment:
    """An assignment of the current annotator, in a project they still work in; 404 for anybody else's.

    `with_document=False` leaves out the HIT's document and summary: saving one answer needs neither, and it is the
    request annotators send most (benchmarks/hit_load.py).
    """
    annotator = current_annotator(request)
    if annotator is None:
        raise Http404("No such assignment")
    if with_document:
        # The document's text is not shown (its stored sentences are) and can be 100 KB: leave it in the database.
        assignments = (Assignment.objects.select_related("hit__project", "hit__document", "hit__summary")
                       .defer("hit__document__text", "hit__document__reference", "hit__summary__text"))
    else:
        assignments = Assignment.objects.select_related("hit__project")
    assignment = assignments.filter(public_id=public_id, annotator=annotator).order_by()[:1]
    assignment = assignment[0] if assignment else None
    if assignment is None:
        raise Http404("No such assignment")
    assignment.annotator = annotator
    if not may_work_in(annotator, assignment.hit.project):
        raise PermissionDenied("You no longer work in this project.")
    return assignment


def managed_projects(user) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user, memberships__role=Membership.Role.MANAGER).distinct()


def hits_visible_to(request) -> QuerySet[Hit]:
    """Managers see every HIT of their projects; an annotator sees the HITs they hold an assignment for."""
    annotator = current_annotator(request)
    own = Q(assignments__annotator=annotator) if annotator else Q(pk__in=[])
    return Hit.objects.filter(Q(project__in=managed_projects(request.user)) | own).distinct()


def units_visible_to(request) -> QuerySet[Unit]:
    annotator = current_annotator(request)
    own = Q(hit__assignments__annotator=annotator) if annotator else Q(pk__in=[])
    return Unit.objects.filter(Q(hit__project__in=managed_projects(request.user)) | own).distinct()


def assignments_visible_to(request) -> QuerySet[Assignment]:
    annotator = current_annotator(request)
    own = Q(annotator=annotator) if annotator else Q(pk__in=[])
    return Assignment.objects.filter(Q(hit__project__in=managed_projects(request.user)) | own)


def labels_visible_to(request) -> QuerySet[Label]:
    """Managers see every label of their projects; an annotator only their own, never another annotator's."""
    annotator = current_annotator(request)
    own = Q(annotator=annotator) if annotator else Q(pk__in=[])
    return Label.objects.filter(Q(unit__hit__project__in=managed_projects(request.user)) | own)


# --- Quality control (annotation/quality/): managers only.

def get_project_annotator(user, slug: str, public_id) -> tuple[Project, Annotator]:
    """An annotator who holds or held an assignment in a project `user` manages; 404 otherwise."""
    project = get_managed_project(user, slug)
    annotator = Annotator.objects.filter(public_id=public_id, assignments__hit__project=project).distinct().first()
    if annotator is None:
        raise Http404("No such annotator in this project")
    return project, annotator


def grades_visible_to(user) -> QuerySet:
    """Grades of the projects `user` manages (annotators never see grades through the API)."""
    from .models import Grade

    return Grade.objects.filter(assignment__hit__project__in=managed_projects(user))


def get_managed_grade(user, assignment_public_id, *, slug: str | None = None):
    """The grade of a submitted assignment in a project `user` manages; 404 for anybody else."""
    grades = grades_visible_to(user).select_related("assignment__hit__project", "assignment__annotator")
    if slug is not None:
        grades = grades.filter(assignment__hit__project__slug=slug)
    grade = grades.filter(assignment__public_id=assignment_public_id).first()
    if grade is None:
        raise Http404("No such graded submission")
    return grade
