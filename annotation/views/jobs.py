"""How every page follows long work: the job's fragment (templates/jobs/_job.html) polls `job_status` every 2 s;
once the job is finished the answer is htmx's stop-polling status (286), so the last state stays on the page.

Stored numbers (corpus.snapshots: the analytics, the reviewer's list, the quality numbers) have one fragment,
templates/jobs/_numbers.html, polled through `numbers_status` while their job runs, and one button, posted to
`numbers_update`. Who may see and ask for each kind's numbers is the kind's own access rule."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh, HttpResponseStopPolling

from corpus import snapshots
from corpus.jobs import StoredNumbers
from corpus.models import Job, Project
from corpus.snapshots import function, numbers_of, numbers_state

from ..permissions import get_managed_project
from .next_page import redirect_to_next


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


def _numbers_kind(code: str, variant: str) -> StoredNumbers:
    try:
        return numbers_of(code, variant)
    except LookupError:
        raise Http404("No such numbers") from None


def numbers_page(project: Project, numbers: StoredNumbers, variant: str) -> str:
    """The page that shows the numbers; a variant is its `variant` query (e.g. the analytics with simulated labels)."""
    return reverse(numbers.page, args=[project.slug]) + (f"?variant={variant}" if variant else "")


@login_required
@require_GET
def numbers_status(request, slug, kind):
    """What a page polls while its numbers are being computed: the job's progress; once it ends, a page that showed
    no numbers (`shown` empty) or older ones reloads, unless the kind says a reload could lose work, when it says
    newer numbers are ready; a failed job shows its error. Polling stops whenever no job runs."""
    variant = request.GET.get("variant", "")
    numbers = _numbers_kind(kind, variant)
    project = function(numbers.access)(request.user, slug)
    state = numbers_state(project, kind, variant)
    page = numbers_page(project, numbers, variant)
    context = {"project": project, "state": state, "back": (request.htmx.current_url if request.htmx else None) or page}
    if not state.running:
        shown = request.GET.get("shown", "")
        newer = state.computed is not None and state.computed.isoformat() != shown
        if newer and (not shown or numbers.reload_when_shown):
            return HttpResponseClientRefresh() if request.htmx else HttpResponseRedirect(page)
        context["newer"] = newer
    return polled_fragment(request, "jobs/_numbers.html", context, stop=not state.running)


@login_required
@require_POST
def numbers_update(request, slug, kind):
    """The button under stale numbers: compute them from the data as it is now (or follow the job already open)."""
    variant = request.POST.get("variant", "")
    numbers = _numbers_kind(kind, variant)
    project = function(numbers.access)(request.user, slug)
    snapshots.numbers_update(project, kind, variant, user=request.user)
    return redirect_to_next(request, numbers_page(project, numbers, variant))

