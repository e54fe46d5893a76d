"""Who may see what. Every page and API view asks these functions (and, for who sees a project at all, the ground
floor's corpus.access, which they build on); nothing else decides access.

A user who is not a member of a project gets a 404, so project slugs do not leak; a member without the needed
role gets a 403.
"""

import uuid
from functools import wraps

from django.contrib.auth import get_user_model
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import Http404

# Pages and API views of annotation reach every access rule through this module, those of the corpus included.
from corpus.access import (  # noqa: F401
    can_manage,
    get_managed_project,
    get_project,
    get_reviewed_project,
    projects_visible_to,
    role_in,
)
from corpus.internals import MARKER_ID, MARKER_OTHER_ID, MARKER_UUID, CompiledQuery
from corpus.models import Document, KeyFact, Membership, Project, Summary

from .models import Annotator, Assignment, Hit, Label, ProjectAnnotator, Unit

User = get_user_model()


def get_managed_hit(user, slug: str, public_id, *, reading: bool = False) -> Hit:
    """A HIT of a project `user` manages (or, `reading`, reviews); 403 for another role, 404 for anybody else."""
    project = get_reviewed_project(user, slug) if reading else get_managed_project(user, slug)
    hit = (Hit.objects.select_related("project", "document", "summary")
           .filter(project=project, public_id=public_id).first())
    if hit is None:
        raise Http404("No such HIT")
    return hit


# --- Annotation work. Pages and API views take the annotator from `current_annotator` and nothing else: the
# account's annotator, or on the crowd worker's own routes the session-bound identity (a private link, a crowd worker
# arriving from MTurk or Prolific; annotation.crowd.tokens decides which routes those are and refuses the rest).

ACCOUNT_ANNOTATOR = CompiledQuery(lambda user_id: Annotator.objects.filter(user_id=user_id), user_id=MARKER_ID)


def _annotator_of(user) -> Annotator | None:
    """The account's annotator row: read with the user by the log-in's backends (config/login.py), else read now."""
    if User.annotator.is_cached(user):
        try:
            return user.annotator
        except Annotator.DoesNotExist:
            return None
    return next(iter(ACCOUNT_ANNOTATOR(user_id=user.pk)), None)


def current_annotator(request) -> Annotator | None:
    """The annotator this request works as: on a crowd worker's route, the crowd session's; elsewhere the logged-in
    account's, its Annotator row made on first use. A request never carries both (OneCallerPerRequest)."""
    if hasattr(request, "_finegrain_annotator"):
        return request._finegrain_annotator
    annotator = None
    from .crowd.tokens import session_of

    if (session := session_of(request)) is not None:
        request._finegrain_annotator = session.annotator
        return session.annotator
    user = request.user
    if user.is_authenticated:
        annotator = _annotator_of(user)
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


def may_work_in(annotator: Annotator, project: Project, *, standing: str | None = None,
                annotates: bool | None = None) -> bool:
    """Accounts work in projects where they hold the annotator role; annotators blocked or paused in a project not
    there (their status is per project).

    `standing` and `annotates` are the two facts this asks of the database, when the caller already read them with
    the project (`with_work_facts`): the HIT page and the answers, the requests annotators send most, then cost no
    query of their own here.
    """
    if (annotator.status_in(project) if standing is None else standing) != Annotator.Status.ACTIVE:
        return False
    if annotator.provider == Annotator.Provider.ACCOUNT:
        if annotator.user_id is None:
            return False
        if annotates is None:
            annotates = project.memberships.filter(user_id=annotator.user_id,
                                                   role=Membership.Role.ANNOTATOR).exists()
        return annotates
    # A crowd worker works where a provider sent them, a link holder where the link points (annotation.crowd.tokens).
    from .crowd.tokens import crowd_may_work

    return crowd_may_work(annotator, project)


def with_work_facts(queryset: QuerySet, annotator: Annotator, project: str) -> QuerySet:
    """`queryset` with what `may_work_in` asks about each row's project (named by the lookup `project`): the
    annotator's standing there (active when nothing is recorded, as `Annotator.status_in`) as `_standing`, and
    whether its account holds the annotator role there as `_annotates`. Read them back with `work_facts`."""
    standing = ProjectAnnotator.objects.filter(annotator=annotator, project=OuterRef(project)).values("status")[:1]
    return queryset.annotate(
        _standing=Coalesce(Subquery(standing), Value(Annotator.Status.ACTIVE)),
        _annotates=Exists(Membership.objects.filter(project=OuterRef(project), user_id=annotator.user_id,
                                                    role=Membership.Role.ANNOTATOR)),
    )


def work_facts(row) -> dict:
    """The keyword arguments of `may_work_in` for a row read through `with_work_facts`."""
    return {"standing": row._standing, "annotates": row._annotates}


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
        status = annotator.status_in(project)
        if annotator.user is not None and role_in(project, annotator.user) is not None \
                and status == Annotator.Status.ACTIVE:
            raise PermissionDenied("Only the project's annotators take HITs; managers see them on the HIT pages.")
        if status != Annotator.Status.ACTIVE and (annotator.user is None or role_in(project, annotator.user)):
            raise PermissionDenied(f"Your annotator account is {Annotator.Status(status).label.lower()} in "
                                   f"{project.name}.")
        raise Http404("No such project")
    return project


def _own_assignments(with_document: bool, public_id, annotator_id: int, user_id: int | None) -> QuerySet:
    if with_document:
        # The document's text is not shown (its stored sentences are) and can be 100 KB: leave it in the database.
        assignments = (Assignment.objects.select_related("hit__project", "hit__document", "hit__summary")
                       .defer("hit__document__text", "hit__document__reference", "hit__summary__text"))
    else:
        assignments = Assignment.objects.select_related("hit__project")
    annotator = Annotator(pk=annotator_id, user_id=user_id)
    return with_work_facts(assignments, annotator, "hit__project").filter(public_id=public_id,
                                                                          annotator=annotator).order_by()[:1]


# The read of every HIT page and every saved answer, built once per process (corpus.internals).
OWN_ASSIGNMENT = {
    with_document: CompiledQuery(lambda public_id, annotator_id, user_id, with_document=with_document:
                                 _own_assignments(with_document, public_id, annotator_id, user_id),
                                 public_id=MARKER_UUID, annotator_id=MARKER_ID, user_id=MARKER_OTHER_ID)
    for with_document in (True, False)
}


def get_own_assignment(request, public_id, *, with_document: bool = True) -> Assignment:
    """An assignment of the current annotator, in a project they still work in; 404 for anybody else's.

    `with_document=False` leaves out the HIT's document and summary: saving one answer needs neither, and it is the
    request annotators send most (benchmarks/hit_load.py).
    """
    assignment = _read_own_assignment(request, public_id, with_document)
    if assignment is None:
        raise Http404("No such assignment")
    if not may_work_in(assignment.annotator, assignment.hit.project, **work_facts(assignment)):
        raise PermissionDenied("You no longer work in this project.")
    return assignment


def _read_own_assignment(request, public_id, with_document: bool) -> Assignment | None:
    """The current annotator's assignment `public_id` (with its HIT's project and the facts `may_work_in` asks),
    whatever its status and wherever the annotator works now; None when there is none."""
    annotator = current_annotator(request)
    if annotator is None:
        return None
    try:
        public_id = public_id if isinstance(public_id, uuid.UUID) else uuid.UUID(str(public_id))
    except ValueError:
        return None
    found = OWN_ASSIGNMENT[with_document](public_id=public_id, annotator_id=annotator.pk, user_id=annotator.user_id)
    if not found:
        return None
    found[0].annotator = annotator
    return found[0]


def managed_projects(user) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user, memberships__role=Membership.Role.MANAGER).distinct()


# --- What an annotator may read. Attention checks must look exactly like real units (paper 3.4, G.3), so an
# annotator reads the corpus only as its own HITs show it: a HIT's units (their display snapshot) and its document's
# sentences, while it holds the HIT (reserved, or lapsed: its page still shows it, to be renewed) or has submitted
# it, in a project it still works in; not once it returned it. The corpus itself (summaries and their sentence
# lists, key-facts and their status, documents' metadata and reference summaries) is for the project's managers:
# set beside a HIT's units, it shows exactly which units are checks. Every page and API list takes its rows from
# the selectors below.

READABLE_STATUSES = (Assignment.Status.RESERVED, Assignment.Status.EXPIRED, Assignment.Status.SUBMITTED)


def _own_projects(annotator_id: int, user_id: int | None) -> QuerySet[Project]:
    """The projects of an annotator's readable assignments, with what `may_work_in` asks about each."""
    annotator = Annotator(pk=annotator_id, user_id=user_id)
    own = Assignment.objects.filter(annotator=annotator, status__in=READABLE_STATUSES)
    return with_work_facts(Project.objects.filter(pk__in=own.values("hit__project_id")), annotator, "pk")


OWN_PROJECTS = CompiledQuery(_own_projects, annotator_id=MARKER_ID, user_id=MARKER_OTHER_ID)


def readable_assignments(request) -> QuerySet[Assignment]:
    """The current annotator's assignments whose HITs it may read (held or submitted, where it still works)."""
    annotator = current_annotator(request)
    if annotator is None:
        return Assignment.objects.none()
    own = Assignment.objects.filter(annotator=annotator, status__in=READABLE_STATUSES)
    projects = OWN_PROJECTS(annotator_id=annotator.pk, user_id=annotator.user_id)
    return own.filter(hit__project_id__in=[project.pk for project in projects
                                           if may_work_in(annotator, project, **work_facts(project))])


def readable_own_assignment(request, public_id) -> Assignment | None:
    """The current annotator's assignment `public_id` if `readable_assignments` holds it, read as the HIT page reads
    it (one compiled query, `OWN_ASSIGNMENT`); None otherwise, and the caller asks `assignments_visible_to`. It
    decides by the same statuses and the same `may_work_in` facts as `readable_assignments`, so it never returns an
    assignment that rule hides."""
    assignment = _read_own_assignment(request, public_id, with_document=False)
    if assignment is None or assignment.status not in READABLE_STATUSES:
        return None
    return assignment if may_work_in(assignment.annotator, assignment.hit.project, **work_facts(assignment)) else None


def hits_visible_to(request) -> QuerySet[Hit]:
    """Managers see every HIT of their projects; an annotator the HITs it may read."""
    own = readable_assignments(request).values("hit_id")
    return Hit.objects.filter(Q(project__in=managed_projects(request.user)) | Q(pk__in=own))


def units_visible_to(request) -> QuerySet[Unit]:
    own = readable_assignments(request).values("hit_id")
    return Unit.objects.filter(Q(hit__project__in=managed_projects(request.user)) | Q(hit_id__in=own))


def assignments_visible_to(request) -> QuerySet[Assignment]:
    own = readable_assignments(request).values("pk")
    return Assignment.objects.filter(Q(hit__project__in=managed_projects(request.user)) | Q(pk__in=own))


def labels_visible_to(request) -> QuerySet[Label]:
    """Managers see every label of their projects; an annotator only their own, never another annotator's."""
    own = readable_assignments(request).values("pk")
    return Label.objects.filter(Q(unit__hit__project__in=managed_projects(request.user)) | Q(assignment__in=own))


def documents_visible_to(request) -> QuerySet[Document]:
    """Managers see their projects' documents; an annotator the documents of the HITs it may read (and of those
    only what the HIT page shows: annotation.api.corpus leaves out the rest)."""
    own = readable_assignments(request).values("hit__document_id")
    return Document.objects.filter(Q(project__in=managed_projects(request.user)) | Q(pk__in=own))


def summaries_visible_to(user) -> QuerySet[Summary]:
    """Managers only: a summary's own sentence list, set beside an FV or KA HIT, tells its checks apart."""
    return Summary.objects.filter(document__project__in=managed_projects(user))


def keyfacts_visible_to(user) -> QuerySet[KeyFact]:
    """Managers only: the document's key-facts and their status, set beside a KV or KA HIT, tell its checks apart."""
    return KeyFact.objects.filter(document__project__in=managed_projects(user))


# --- Quality control (annotation/quality/): managers only.

def get_project_annotator(user, slug: str, public_id) -> tuple[Project, Annotator]:
    """An annotator who holds or held an assignment in a project `user` manages; 404 otherwise."""
    project = get_managed_project(user, slug)
    annotator = Annotator.objects.filter(public_id=public_id, assignments__hit__project=project).distinct().first()
    if annotator is None:
        raise Http404("No such annotator in this project")
    return project, annotator


def get_annotator_standing(user, slug: str, public_id):
    """An annotator's standing (status, screening) in a project `user` manages, for a manager to change there and
    nowhere else: 404 for a project `user` does not manage or an annotator who never worked in it, 403 for the
    project's annotators. Managing project A gives no say over the annotator's standing in project B."""
    from .models import ProjectAnnotator

    project, annotator = get_project_annotator(user, slug, public_id)
    return ProjectAnnotator.objects.get_or_create(project=project, annotator=annotator)[0]


def get_screening_project(request, slug: str) -> Project:
    """The project whose screening test the current annotator may take: an account with the annotator role there, or
    a private link or Prolific session of that project (the session names it). MTurk workers take MTurk's own copy
    of the test. 404 for anybody else."""
    from .crowd.tokens import session_of

    annotator = current_annotator(request)
    project = Project.objects.filter(slug=slug).first()
    if project is None or annotator is None:
        raise Http404("No such project")
    session = session_of(request)
    if session is not None:
        if session.project_id != project.pk or session.provider not in (Annotator.Provider.LINK,
                                                                         Annotator.Provider.PROLIFIC):
            raise Http404("No such project")
        return project
    if annotator.provider == Annotator.Provider.ACCOUNT and annotator.user_id is not None and \
            project.memberships.filter(user_id=annotator.user_id, role=Membership.Role.ANNOTATOR).exists():
        return project
    raise Http404("No such project")


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
