"""The manager's assist pages: start a run (a job the project page follows), select hallucinogenic documents."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from corpus.access import get_managed_project
from corpus.models import JobAlreadyOpen

from .hallucinogenic import hallucinogenic_select
from .runs import assist_start


class HallucinogenicForm(forms.Form):
    """How many hallucinogenic documents to sample per domain, and the seed that makes the sample reproducible."""

    per_domain = forms.IntegerField(min_value=1, required=False)
    # Not below 0: random.Random(-n) draws as Random(n), so a negative seed would only alias another.
    seed = forms.IntegerField(min_value=0, required=False)

    def clean_per_domain(self):
        return 25 if self.cleaned_data["per_domain"] is None else self.cleaned_data["per_domain"]

    def clean_seed(self):
        return self.cleaned_data["seed"] or 0


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
    form = HallucinogenicForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Documents per domain and seed must be whole numbers (at least 1 per domain, a seed "
                                "of 0 or more).")
        return redirect(project)
    selection = hallucinogenic_select(project=project, per_domain=form.cleaned_data["per_domain"],
                                      seed=form.cleaned_data["seed"])
    messages.success(request, selection.summary())
    return redirect(project)
