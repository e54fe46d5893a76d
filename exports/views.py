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

from annotation.views.jobs import numbers_page
from assist.config import ConfigError, backend_config
from assist.evaluators import NAMES as EVALUATOR_NAMES
from assist.evaluators.runs import evaluator_run_start
from assist.job_kinds import EVALUATOR
from assist.llm.base import BackendError
from corpus.access import get_managed_project
from corpus.importing import DatasetError
from corpus.models import Job, JobAlreadyOpen
from corpus.snapshots import numbers_state

from .csv_files import write_rows
from .evaluators import import_evaluator_scores
from .export import TABLE_FORMATS, ExportOptions
from .figures import DIMENSIONS, SIMULATED, table_from
from .figures import KIND as FIGURES_KIND
from .job_kinds import EXPORT
from .paper_tables import PAPER_TABLES
from .runs import export_start
from .tables import TABLES, table_columns


def _variant(request) -> str:
    """The figures with simulated labels counted, or without: `variant=simulated` (or `simulated=1`)."""
    query = request.GET
    return SIMULATED if query.get("variant") == SIMULATED or query.get("simulated") == "1" else ""


@login_required
def analytics(request, slug):
    """The figures as a job computed them from the labels the database holds now; while there are none that are
    current, what the stored numbers' fragment says (computing, failed, or a button that asks for them)."""
    project = get_managed_project(request.user, slug)
    variant = _variant(request)
    dimension = request.GET.get("dimension", "composite")
    if dimension not in DIMENSIONS:
        dimension = "composite"
    config = backend_config()
    numbers = numbers_state(project, FIGURES_KIND, variant)
    context = {"project": project, "include_simulated": variant == SIMULATED, "numbers": numbers,
               "dimension": dimension, "dimensions": DIMENSIONS, "tables": TABLES, "table_formats": TABLE_FORMATS,
               "jobs": project.jobs.filter(kind=EXPORT)[:5], "evaluator_names": EVALUATOR_NAMES,
               "evaluator_backends": list(dict.fromkeys([config.llm_backend, *config.llm_voter_backends])),
               "evaluator_jobs": project.jobs.filter(kind=EVALUATOR)[:5]}
    if numbers.data is None:
        return render(request, "exports/analytics.html", context)
    page = numbers.data["page"]
    context.update(page)
    context.update({"source": numbers.data["source"], "computed": numbers.computed,
                    "heatmap": page.get("heatmaps", {}).get(dimension)})
    return render(request, "exports/analytics.html", context)


@login_required
@require_GET
def table_csv(request, slug, table):
    """One table as CSV, from current figures only (never the figures of older labels, never a computation inside
    the request): while they are being computed, 503 with Retry-After; when none are current and none are being
    computed, 409, pointing to the page's button."""
    project = get_managed_project(request.user, slug)
    if table not in TABLES and table not in PAPER_TABLES and not table.startswith("evaluator-"):
        raise Http404("No such table")
    variant = _variant(request)
    numbers = numbers_state(project, FIGURES_KIND, variant)
    if numbers.data is None:
        page = request.build_absolute_uri(numbers_page(project, numbers.numbers, variant))
        if numbers.running:
            response = HttpResponse(f"The analytics figures are being computed from the current labels (job "
                                    f"#{numbers.job.pk}). Try again in a moment.\n", status=503,
                                    content_type="text/plain; charset=utf-8")
            response["Retry-After"] = "5"
            return response
        reason = (f"the last computation failed: {numbers.job.error}" if numbers.failed
                  else "the labels changed since they were computed" if numbers.stored else "they were never computed")
        return HttpResponse(f"No current analytics figures: {reason}. Compute them on the analytics page, {page}, "
                            "then download again.\n", status=409, content_type="text/plain; charset=utf-8")
    rows = table_from(numbers.data, table, dimension=request.GET.get("dimension", "composite"))
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
