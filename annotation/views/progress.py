"""The manager's view of the annotation work: progress (polled live), HITs, one HIT's labels, annotators."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from corpus.models import Assistance, Membership

from ..forms import AblationForm, form_problems
from ..job_kinds import HITS_BUILD
from ..models import Annotator, Assignment, Hit, ItemFlag, Label, Task
from ..models.assignment import failed_submission_q
from ..permissions import get_managed_hit, get_managed_project, get_reviewed_project, role_in
from ..quality.numbers import open_labels, quality_numbers
from ..selectors import add_settling, count_of, is_finished, simulated_submissions, started_hits, task_progress
from ..services.assistance import AssistanceRefused, assign_ablation, set_hit_assistance
from ..services.hits import hits_build_start
from ..wording import describe_unit


def _progress_context(project) -> dict:
    rows = add_settling(project, task_progress(project))
    return {"project": project, "progress": rows, "finished": is_finished(rows), "tasks": Task.choices,
            "simulated": simulated_submissions(rows)}


def _page_context(project, context: dict | None = None) -> dict:
    """The whole page: the progress, the Build HITs form and the latest builds (jobs the page follows)."""
    return {**(context or _progress_context(project)),
            "build_jobs": project.jobs.filter(kind=HITS_BUILD)[:3]}


@login_required
@require_GET
def progress(request, slug):
    project = get_managed_project(request.user, slug)
    context = _progress_context(project)
    if request.htmx:
        response = render(request, "annotation/progress/_progress.html", context)
        if context["finished"]:
            response.status_code = HttpResponseStopPolling.status_code
        return response
    return render(request, "annotation/progress/progress.html", _page_context(project, context))


@login_required
@require_POST
def hits_build(request, slug):
    """Queue the build (a job the page follows): with attention checks, a large project takes minutes."""
    project = get_managed_project(request.user, slug)
    task = request.POST.get("task", "")
    if task not in (*Task.values, "all"):
        labels = [label.lower() for label in Task.labels]
        error = (f"Choose a task to build HITs for: {', '.join(labels[:-1])} or {labels[-1]}, or all three. "
                 "Nothing was built.")
        return render(request, "annotation/progress/progress.html", {**_page_context(project),
                                                                     "build_error": error}, status=400)
    job = hits_build_start(project=project, tasks=Task.values if task == "all" else [task], user=request.user)
    messages.success(request, f"Building HITs (job #{job.pk}): progress shows under Build HITs.")
    return redirect("progress", slug)


@login_required
@require_GET
def hit_list(request, slug):
    return _hit_list_page(request, get_reviewed_project(request.user, slug))


def _hit_list_page(request, project, status=200, **extra):
    task = request.GET.get("task") or request.POST.get("task", "")
    # The project comes along because each HIT's places (Hit.places) follow its policy and what review added.
    hits = (Hit.objects.filter(project=project).select_related("document", "summary", "project")
            .annotate(counted=count_of(Assignment.objects.counted(), "hit"),
                      failed=count_of(Assignment.objects.filter(failed_submission_q()), "hit"),
                      unconfirmed=count_of(Assignment.objects.filter(status=Assignment.Status.SUBMITTED,
                                                                     confirmed_at__isnull=True), "hit"),
                      reserved=count_of(Assignment.objects.filter(status=Assignment.Status.RESERVED,
                                                                  expires_at__gt=timezone.now()), "hit"))
            .order_by("task", "position", "pk"))
    if task in Task.values:
        hits = hits.filter(task=task)
    page = Paginator(hits, 50).get_page(request.GET.get("page"))
    return render(request, "annotation/progress/hit_list.html",
                  {"project": project, "page": page, "task": task, "tasks": Task.choices,
                   "levels": Assistance.choices,
                   "read_only": role_in(project, request.user) != Membership.Role.MANAGER, **extra}, status=status)


@login_required
@require_POST
def hits_ablation(request, slug):
    """Give an assistance level to a random share of a task's HITs nobody has started (paper 3.4's ablation)."""
    project = get_managed_project(request.user, slug)
    form, level = AblationForm(request.POST), request.POST.get("assistance", "")
    problems = form_problems(form)
    if not problems:
        task, share, seed = form.cleaned_data["task"], form.cleaned_data["share"], form.cleaned_data["seed"] or 0
        try:
            result = assign_ablation(project=project, task=task, level=level, share=share / 100, seed=seed,
                                     user=request.user)
        except AssistanceRefused as refusal:
            problems = str(refusal)
    if problems:
        return _hit_list_page(request, project, status=400, ablation_error=f"{problems} Nothing was changed.")
    level_name = f"“{Assistance(level).label}”" if level else "the project's level"
    messages.success(request, f"{Task(task).label}: {result.chosen} of {result.eligible} "
                              f"HITs not yet started now show {level_name}, the others the project's level "
                              f"({result.changed} changed); {result.started} started HITs keep theirs.")
    return redirect(f"{reverse('hit_list', args=[slug])}?task={task}")


def _label_text(label, task: str) -> str:
    def yes_no(value):
        return "—" if value is None else ("yes" if value else "no")

    if task == Task.FACT_VERIFICATION:
        text = "no error" if label.has_error is False else (
            f"error: {label.error_type_names}" if label.has_error else "—")
        if label.ai_right is not None:
            text += f" · AI {'right' if label.ai_right else 'wrong'}"
        return text
    return yes_no(label.useful if task == Task.KEYFACT_VALIDATION else label.aligned)


@login_required
@require_GET
def hit_detail(request, slug, hit_id):
    return _hit_detail_page(request, get_managed_hit(request.user, slug, hit_id, reading=True))


def _hit_detail_page(request, hit, status=200, **extra):
    project = hit.project
    units = list(hit.units.order_by("position"))
    assignments = list(hit.assignments.select_related("annotator__user").order_by("reserved_at", "pk"))
    labels = {(label.unit_id, label.assignment_id): label for label in Label.objects.filter(unit__hit=hit)}
    flags = {(flag.unit_id, flag.assignment_id): flag.comment for flag in ItemFlag.objects.filter(unit__hit=hit)}
    rows = [{"unit": unit, "name": describe_unit(unit),
             "cells": [(labels.get((unit.pk, assignment.pk)), _label_text(labels[(unit.pk, assignment.pk)], hit.task)
                        if (unit.pk, assignment.pk) in labels else "", flags.get((unit.pk, assignment.pk), ""))
                       for assignment in assignments]}
            for unit in units]
    return render(request, "annotation/progress/hit_detail.html",
                  {"project": project, "hit": hit, "assignments": assignments, "rows": rows,
                   "flagged": len(flags),
                   "levels": Assistance.choices, "started": started_hits(Hit.objects.filter(pk=hit.pk)).exists(),
                   "read_only": role_in(project, request.user) != Membership.Role.MANAGER,
                   **extra}, status=status)


@login_required
@require_POST
def hit_assistance(request, slug, hit_id):
    """Set one HIT's assistance level ('' = the project's) while nobody has started it."""
    hit = get_managed_hit(request.user, slug, hit_id)
    try:
        set_hit_assistance(hit=hit, level=request.POST.get("assistance", ""), user=request.user)
    except AssistanceRefused as refusal:
        return _hit_detail_page(request, hit, status=400, assistance_error=str(refusal))
    messages.success(request, "Assistance saved: the next annotator of this HIT sees the new level.")
    return redirect("hit_detail", slug, hit_id)


@login_required
@require_GET
def annotator_list(request, slug):
    project = get_managed_project(request.user, slug)
    assignments = Assignment.objects.filter(hit__project=project)
    annotators = (Annotator.objects.with_status_in(project).filter(Exists(assignments.filter(annotator=OuterRef("pk"))))
                  .annotate(submitted=count_of(assignments.filter(status=Assignment.Status.SUBMITTED), "annotator"),
                            reserved=count_of(assignments.filter(status=Assignment.Status.RESERVED), "annotator"))
                  .select_related("user").order_by("created", "pk"))
    page = Paginator(annotators, 100).get_page(request.GET.get("page"))
    # Labels and seconds: those of closed assignments as a job stored them (annotation.quality.numbers), plus those
    # of the HITs still open, read now.
    numbers = quality_numbers(project)
    stored, live = numbers.labels(), open_labels(project, [annotator.pk for annotator in page])
    for annotator in page:
        if numbers.data is None:
            annotator.labels_given = annotator.mean_seconds = None
            continue
        n, seconds = (sum(pair) for pair in zip(stored.get(annotator.pk, (0, 0.0)), live.get(annotator.pk, (0, 0.0))))
        annotator.labels_given, annotator.mean_seconds = n, (seconds / n if n else None)
    return render(request, "annotation/progress/annotators.html", {"project": project, "page": page,
                                                                   "numbers": numbers})
