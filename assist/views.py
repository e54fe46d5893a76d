"""The manager's assist pages: start a run (a job the project page follows), select hallucinogenic documents."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from corpus.access import get_managed_project
from corpus.models import JobAlreadyOpen

from .hallucinogenic import hallucinogenic_select
from .runs import assist_start


@login_required
@require_POST
def assist_start_view(request, slug):
    project = get_managed_project(request.user, slug)
    try:
        assist_start(project=project, user=request.user)
    except JobAlreadyOpen:
        messages.info(request, "An assist run is already in progress.")
    else:
        messages.success(request, "AI assistance started: progress shows below.")
    return redirect(project)


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
