"""The manager's assist pages: start a run, follow its progress (htmx polling on the Job row)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from annotation.models import Job
from annotation.permissions import get_managed_project

from .hallucinogenic import hallucinogenic_select
from .llm.registry import get_backend
from .models import ContextualMapping, PreLabel
from .pipeline import OFFLINE_KEYFACTS_NOTE
from .runs import JOB_KIND, assist_run_start


def assist_status(project) -> dict:
    backend = get_backend()
    return {
        "backend": backend,
        "offline": backend.name == "offline-similarity",
        "offline_note": OFFLINE_KEYFACTS_NOTE,
        "mapped": ContextualMapping.objects.filter(summary_sentence__summary__document__project=project).count()
        + ContextualMapping.objects.filter(keyfact__document__project=project).count(),
        "prelabeled": PreLabel.objects.filter(summary_sentence__summary__document__project=project,
                                              status=PreLabel.Status.OK).count(),
        "flagged": PreLabel.objects.filter(summary_sentence__summary__document__project=project,
                                           status=PreLabel.Status.OK).exclude(category="no_error").count(),
        "hallucinogenic": project.documents.filter(hallucinogenic=True).count(),
        "job": project.jobs.filter(kind=JOB_KIND).first(),
    }


@login_required
@require_POST
def assist_start(request, slug):
    project = get_managed_project(request.user, slug)
    running = project.jobs.filter(kind=JOB_KIND, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).first()
    if running:
        messages.info(request, "An assist run is already in progress.")
    else:
        assist_run_start(project=project, user=request.user)
        messages.success(request, "AI assistance started: progress shows below.")
    return redirect(project)


@login_required
def job_status(request, slug, pk):
    project = get_managed_project(request.user, slug)
    job = get_object_or_404(project.jobs, pk=pk)
    response = render(request, "assist/_job.html", {"project": project, "job": job})
    if request.htmx and job.is_finished:
        # Status 286 tells htmx to stop polling; the content still replaces the old one.
        stop = HttpResponseStopPolling(response.content)
        return stop
    return response


@login_required
@require_POST
def hallucinogenic_run(request, slug):
    project = get_managed_project(request.user, slug)
    try:
        per_domain = int(request.POST.get("per_domain", "25"))
        seed = int(request.POST.get("seed", "0"))
        if per_domain < 1:
            raise ValueError
    except ValueError:
        messages.error(request, "Documents per domain and seed must be whole numbers (at least 1 per domain).")
        return redirect(project)
    selection = hallucinogenic_select(project=project, per_domain=per_domain, seed=seed)
    messages.success(request, selection.summary())
    return redirect(project)
