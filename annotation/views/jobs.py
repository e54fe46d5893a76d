"""How every page follows long work: the job's fragment (templates/jobs/_job.html) polls this view every 2 s; once
the job is finished the answer is htmx's stop-polling status (286), so the last state stays on the page."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseStopPolling

from corpus.models import Job, Project

from ..permissions import get_managed_project


def polled_fragment(request, template: str, context: dict, *, stop: bool):
    """A fragment a page polls; with `stop`, htmx's stop-polling status (286), so the last state stays on the page."""
    if stop and request.htmx:
        return HttpResponseStopPolling(render_to_string(template, context, request=request))
    return render(request, template, context)


def job_response(request, job: Job, *, project: Project):
    """The job's fragment for htmx (with 286 once it is finished), its own page for a browser without htmx."""
    context = {"project": project, "job": job}
    if not request.htmx:
        return render(request, "jobs/page.html", context)
    return polled_fragment(request, "jobs/_job.html", context, stop=job.is_finished)


@login_required
@require_GET
def job_status(request, slug, pk):
    project = get_managed_project(request.user, slug)
    return job_response(request, get_object_or_404(project.jobs, pk=pk), project=project)
