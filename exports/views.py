"""The researcher's analytics pages: agreement, scores, error types, progress, evaluators, exports (managers only).

Every view asks corpus.access.get_managed_project: outsiders get a 404, annotators a 403.
"""

import io
from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from annotation.views.jobs import polled_fragment
from assist.config import ConfigError, backend_config
from assist.evaluators import NAMES as EVALUATOR_NAMES
from assist.evaluators.runs import evaluator_run_start
from assist.job_kinds import EVALUATOR
from assist.llm.base import BackendError
from corpus.access import get_managed_project
from corpus.importing import DatasetError
from corpus.models import Job, JobAlreadyOpen

from .csv_files import write_rows
from .evaluators import import_evaluator_scores
from .export import TABLE_FORMATS, ExportOptions
from .figures import DIMENSIONS, current_figures, figures_job, figures_start, labels_fingerprint, table_from
from .figures import KIND as FIGURES_KIND
from .job_kinds import EXPORT
from .paper_tables import PAPER_TABLES
from .runs import export_start
from .tables import TABLES, table_columns


def _include_simulated(request) -> bool:
    return (request.GET.get("simulated") or request.POST.get("simulated")) == "1"


@login_required
def analytics(request, slug):
    """The figures as computed for the labels the database holds now; while they are being (re)computed, the job's
    progress instead, polled by htmx (exports.figures: nothing is computed in the request)."""
    project = get_managed_project(request.user, slug)
    include_simulated = _include_simulated(request)
    dimension = request.GET.get("dimension", "composite")
    if dimension not in DIMENSIONS:
        dimension = "composite"
    config = backend_config()
    context = {"project": project, "include_simulated": include_simulated,
               "dimension": dimension, "dimensions": DIMENSIONS, "tables": TABLES, "table_formats": TABLE_FORMATS,
               "jobs": project.jobs.filter(kind=EXPORT)[:5], "evaluator_names": EVALUATOR_NAMES,
               "evaluator_backends": list(dict.fromkeys([config.llm_backend, *config.llm_voter_backends])),
               "evaluator_jobs": project.jobs.filter(kind=EVALUATOR)[:5]}
    stored, fingerprint = current_figures(project, include_simulated=include_simulated)
    if stored is None:
        context["figures_job"] = figures_job(project, include_simulated=include_simulated, fingerprint=fingerprint,
                                             user=request.user)
        return render(request, "exports/analytics.html", context)
    page = stored.figures["page"]
    context.update(page)
    context.update({"source": stored.figures["source"], "computed": stored.computed,
                    "heatmap": page.get("heatmaps", {}).get(dimension)})
    return render(request, "exports/analytics.html", context)


@login_required
@require_GET
def analytics_status(request, slug):
    """What the page polls while its figures are computed: the job's progress, then a refresh once they are current
    (a failed job stops the polling and shows its error)."""
    project = get_managed_project(request.user, slug)
    include_simulated = _include_simulated(request)
    stored, fingerprint = current_figures(project, include_simulated=include_simulated)
    if stored is not None:
        if request.htmx:
            return HttpResponseClientRefresh()
        return redirect(_analytics_url(project, include_simulated))
    job = figures_job(project, include_simulated=include_simulated, fingerprint=fingerprint, user=request.user)
    return polled_fragment(request, "exports/_figures_pending.html",
                           {"project": project, "figures_job": job, "include_simulated": include_simulated},
                           stop=job.status == Job.Status.FAILED)


@login_required
@require_POST
def analytics_compute(request, slug):
    """Compute the figures again after a failed job (a page view never retries a job that failed on the same
    labels)."""
    project = get_managed_project(request.user, slug)
    include_simulated = _include_simulated(request)
    if not project.jobs.open().filter(kind=FIGURES_KIND, params__include_simulated=include_simulated).exists():
        figures_start(project=project, include_simulated=include_simulated, user=request.user,
                      fingerprint=labels_fingerprint(project))
    return redirect(_analytics_url(project, include_simulated))


def _analytics_url(project, include_simulated: bool) -> str:
    return reverse("exports_analytics", args=[project.slug]) + ("?simulated=1" if include_simulated else "")


@login_required
@require_GET
def table_csv(request, slug, table):
    """One table as CSV, from the current figures only: while they are being recomputed, 503 and Retry-After
    (never the figures of older labels, never a computation inside the request)."""
    project = get_managed_project(request.user, slug)
    if table not in TABLES and table not in PAPER_TABLES and not table.startswith("evaluator-"):
        raise Http404("No such table")
    include_simulated = _include_simulated(request)
    stored, fingerprint = current_figures(project, include_simulated=include_simulated)
    if stored is None:
        job = figures_job(project, include_simulated=include_simulated, fingerprint=fingerprint, user=request.user)
        state = f"failed: {job.error}" if job.status == Job.Status.FAILED else job.get_status_display().lower()
        response = HttpResponse(f"The analytics are being computed from the current labels (job #{job.pk}, {state}). "
                                "Try again in a moment.\n", status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "5"
        return response
    rows = table_from(stored.figures, table, dimension=request.GET.get("dimension", "composite"))
    if rows is None:
        raise Http404("No such table")
    buffer = io.StringIO()
    write_rows(buffer, rows, table_columns(table))
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    # An evaluator's name is kept as written: quotes, slashes and letters beyond ASCII must not break the header.
    response["Content-Disposition"] = content_disposition_header(True, f"{project.slug}-{table}.csv".replace("/", "-"))
    return response


@login_required
@require_POST
def evaluator_upload(request, slug):
    project = get_managed_project(request.user, slug)
    upload, name = request.FILES.get("file"), request.POST.get("evaluator", "").strip()
    if upload is None or not name:
        messages.error(request, "Choose a file and name the evaluator.")
        return redirect("exports_analytics", slug=project.slug)
    try:
        count = import_evaluator_scores(project=project, evaluator=name, data=upload.read(), filename=upload.name)
    except DatasetError as exc:
        for error in exc.errors[:50]:
            messages.error(request, f"{upload.name}: {error}")
        messages.error(request, f"Nothing imported: {len(exc.errors)} problem(s).")
    else:
        messages.success(request, f"Imported the scores of {name} for {count} summaries.")
    return redirect(reverse("exports_analytics", args=[project.slug]) + "#evaluators")


@login_required
@require_POST
def evaluator_run(request, slug):
    """Start an evaluator run over the project (a Job row, a task per document); the page polls its progress."""
    project = get_managed_project(request.user, slug)
    evaluator, backend = request.POST.get("evaluator", ""), request.POST.get("backend", "").strip()
    anchor = reverse("exports_analytics", args=[project.slug]) + "#evaluators"
    if evaluator not in EVALUATOR_NAMES:
        messages.error(request, f"Choose an evaluator among {', '.join(EVALUATOR_NAMES)}.")
        return redirect(anchor)
    if backend not in ("", *backend_config().llm_voter_backends, backend_config().llm_backend):
        messages.error(request, "Choose one of the configured LLM backends.")
        return redirect(anchor)
    try:
        evaluator_run_start(project=project, evaluator=evaluator, backend=backend, user=request.user)
    except JobAlreadyOpen:
        messages.info(request, f"A {evaluator} run is already in progress: its progress shows below.")
    except (ConfigError, BackendError) as exc:
        messages.error(request, f"{evaluator} cannot run: {exc}")
    else:
        messages.success(request, f"{evaluator} started: progress shows below.")
    return redirect(anchor)


@login_required
@require_POST
def export_create(request, slug):
    project = get_managed_project(request.user, slug)
    tables = request.POST.get("tables") or None
    options = ExportOptions(
        format="json" if request.POST.get("format") == "json" else "jsonl",
        annotator_labels=bool(request.POST.get("annotator_labels")), assistance=bool(request.POST.get("assistance")),
        checks=bool(request.POST.get("checks")), tables=tables if tables in TABLE_FORMATS else None,
        card=bool(request.POST.get("card")), include_simulated=bool(request.POST.get("include_simulated")),
        dawid_skene=bool(request.POST.get("dawid_skene")))
    try:
        export_start(project=project, options=options, user=request.user)
    except JobAlreadyOpen:
        messages.info(request, "An export is already running: its progress shows below.")
    else:
        messages.success(request, "Export started: progress shows below.")
    return redirect(reverse("exports_analytics", args=[project.slug]) + "#export")


@login_required
def export_download(request, slug, pk, name):
    project = get_managed_project(request.user, slug)
    job = get_object_or_404(project.jobs.filter(kind=EXPORT, status=Job.Status.DONE), pk=pk)
    if name not in job.result.get("files", []):
        raise Http404("No such file")
    path = Path(job.result["directory"]) / name
    if not path.is_file():
        raise Http404("The file is gone")
    return FileResponse(path.open("rb"), as_attachment=True, filename=name)
