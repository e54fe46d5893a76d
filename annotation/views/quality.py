"""Quality control pages: the manager's annotator dashboard, one annotator's page with grade overrides and status,
and the annotators' screening test (paper G.1, G.3)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ..crowd.tokens import session_of
from ..models import Annotator, Grade, ProjectAnnotator
from ..permissions import (
    annotator_required,
    get_annotator_standing,
    get_managed_grade,
    get_managed_project,
    get_project_annotator,
    get_screening_project,
)
from ..quality.dashboard import SORT_KEYS, sort_rows
from ..quality.numbers import quality_numbers
from ..quality.policy import annotator_set_status
from ..quality.qualification import (
    QUESTIONS,
    InvalidScreening,
    ScreeningClosed,
    attempts_left,
    closed_message,
    screening_take,
)
from ..services.grades import OverrideRefused, grade_override
from .crowd import after_screening
from .pagination import paginate

DEFAULT_SORT = "pass_rate"
ANNOTATORS_PER_PAGE = 50
GRADES_PER_PAGE = 50
DECISIONS_PER_PAGE = 50


@login_required
@require_GET
def quality_dashboard(request, slug):
    project = get_managed_project(request.user, slug)
    sort = request.GET.get("sort", DEFAULT_SORT)
    status, provider = request.GET.get("status", ""), request.GET.get("provider", "")
    if sort.lstrip("-") not in SORT_KEYS:
        return HttpResponseBadRequest(f"Unknown sort: use one of {', '.join(SORT_KEYS)} (with - to reverse).")
    if status and status not in Annotator.Status.values:
        return HttpResponseBadRequest(f"Unknown status: use one of {', '.join(Annotator.Status.values)}.")
    if provider and provider not in Annotator.Provider.values:
        return HttpResponseBadRequest(f"Unknown provider: use one of {', '.join(Annotator.Provider.values)}.")
    annotators = Annotator.objects.all()
    if status:
        # The status in this project; no row means active.
        others = ProjectAnnotator.objects.filter(project=project).exclude(status=Annotator.Status.ACTIVE)
        if status == Annotator.Status.ACTIVE:
            annotators = annotators.exclude(pk__in=others.values("annotator_id"))
        else:
            annotators = annotators.filter(pk__in=others.filter(status=status).values("annotator_id"))
    if provider:
        annotators = annotators.filter(provider=provider)
    # The numbers a job stored (annotation.quality.numbers); status and provider are read now.
    numbers = quality_numbers(project)
    dashboard = numbers.dashboard(annotators)
    rows, query = paginate(request, sort_rows(dashboard.rows if dashboard else [], sort), ANNOTATORS_PER_PAGE)
    return render(request, "annotation/quality/dashboard.html", {
        "project": project, "numbers": numbers, "dashboard": dashboard, "rows": rows, "query": query, "sort": sort,
        "status": status, "provider": provider, "sort_keys": SORT_KEYS,
        "statuses": Annotator.Status.choices, "providers": Annotator.Provider.choices,
    })


@login_required
@require_GET
def annotator_quality(request, slug, annotator_id):
    project, annotator = get_project_annotator(request.user, slug, annotator_id)
    numbers = quality_numbers(project)
    dashboard = numbers.dashboard(Annotator.objects.filter(pk=annotator.pk))
    grades = (Grade.objects.filter(assignment__annotator=annotator, assignment__hit__project=project)
              .select_related("assignment__hit", "overridden_by").order_by("-assignment__submitted_at"))
    decisions = (annotator.decisions.filter(project=project).prefetch_related("rests_on__hit")
                 .order_by("-created", "-pk"))
    # Both grow with the annotator's work: a page of each (the decisions' own page number apart).
    grades, grades_query = paginate(request, grades, GRADES_PER_PAGE)
    decisions, decisions_query = paginate(request, decisions, DECISIONS_PER_PAGE, "decisions_page")
    return render(request, "annotation/quality/annotator.html", {
        "project": project, "annotator": annotator, "row": dashboard.rows[0] if dashboard and dashboard.rows else None,
        "numbers": numbers, "dashboard": dashboard, "grades": grades, "grades_query": grades_query,
        "decisions": decisions, "decisions_query": decisions_query, "statuses": Annotator.Status.choices,
        "standing": annotator.standing_in(project),
    })


@login_required
@require_POST
def grade_override_view(request, slug, assignment_id):
    get_managed_project(request.user, slug)  # 404 for outsiders, 403 for the project's annotators.
    grade = get_managed_grade(request.user, assignment_id, slug=slug)
    choice = request.POST.get("passed", "")
    annotator = grade.assignment.annotator
    if choice not in ("yes", "no"):
        messages.error(request, "Choose whether the submission passes (yes or no).")
        return redirect("annotator_quality", slug, annotator.public_id)
    try:
        grade_override(grade=grade, passed=choice == "yes", reason=request.POST.get("reason", ""),
                       user=request.user)
    except OverrideRefused as refusal:
        messages.error(request, str(refusal))
    else:
        messages.success(request, "The grade was overridden; the decisions follow the new grade.")
    return redirect("annotator_quality", slug, annotator.public_id)


@login_required
@require_POST
def annotator_status_view(request, slug, annotator_id):
    standing = get_annotator_standing(request.user, slug, annotator_id)
    project, annotator = standing.project, standing.annotator
    status = request.POST.get("status", "")
    if status not in Annotator.Status.values:
        messages.error(request, "Choose a status: active, paused or blocked.")
    else:
        try:
            annotator_set_status(annotator=annotator, project=project, status=status, user=request.user,
                                 reason=request.POST.get("reason", ""))
        except OverrideRefused as refusal:
            messages.error(request, str(refusal))
        else:
            messages.success(request, f"{annotator.pseudonym} is now {Annotator.Status(status).label.lower()} in "
                                      f"{project.name}.")
    return redirect("annotator_quality", project.slug, annotator.public_id)


@annotator_required
@require_http_methods(["GET", "POST"])
def screening(request, slug):
    """A project's comprehension test, for annotators who must pass it before taking its HITs (paper G.1: 100% to
    pass), with `Project.screening_attempts` attempts. A failed attempt is told what to do next and how many attempts
    are left, never its score or which answers were wrong: the questions and their key are the same for every worker
    and every attempt, so answers shown once would pass the next attempt and the next worker without reading."""
    project = get_screening_project(request, slug)
    annotator = request.annotator
    standing = annotator.standing_in(project)
    context = {"questions": QUESTIONS, "annotator": annotator, "project": project, "standing": standing,
               "attempts_left": attempts_left(standing, project)}
    if standing.qualified_at is not None and request.method == "GET" and (session := session_of(request)):
        return after_screening(request, session, project)  # passed already (a reload, the back button)
    if standing.qualified_at is None and context["attempts_left"] == 0:
        return render(request, "annotation/quality/screening.html", {**context, "closed": closed_message(project)},
                      status=403)
    if request.method == "POST":
        answers = {question.key: request.POST.get(question.key, "") for question in QUESTIONS}
        try:
            outcome = screening_take(annotator=annotator, project=project, answers=answers)
        except InvalidScreening as invalid:
            return render(request, "annotation/quality/screening.html", {**context, "error": str(invalid)},
                          status=400)
        except ScreeningClosed as closed:
            return render(request, "annotation/quality/screening.html", {**context, "closed": str(closed)},
                          status=403)
        if outcome.passed:
            if (session := session_of(request)) is not None:  # a link or a study: on to the HIT
                return after_screening(request, session, project)
            messages.success(request, f"You passed the screening test of {project.name}; its HITs are open for you.")
            return redirect("work_home")
        context.update(failed=True, attempts_left=outcome.attempts_left)
        if outcome.attempts_left == 0:
            return render(request, "annotation/quality/screening.html", {**context, "closed": closed_message(project)},
                          status=403)
    return render(request, "annotation/quality/screening.html", context)
