"""The researcher's analytics pages: agreement, scores, error types, progress, evaluators, exports (managers only).

Every view asks corpus.access.get_managed_project: outsiders get a 404, annotators a 403.
"""

import io
import math
from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.models import Task
from assist.config import ConfigError, backend_config
from assist.evaluators import NAMES as EVALUATOR_NAMES
from assist.evaluators.runs import evaluator_run_start
from assist.llm.base import BackendError
from corpus.access import get_managed_project
from corpus.importing import DatasetError
from corpus.models import Job, JobAlreadyOpen

from . import plots
from .csv_files import write_rows
from .evaluators import import_evaluator_scores
from .export import TABLE_FORMATS, ExportOptions
from .report import COEFFICIENT_NAMES, PAPER_REFERENCE
from .runs import export_start
from .scores import SCORE_DIMENSIONS
from .selectors import evaluators_of, label_source
from .tables import (
    TABLES,
    cached_analytics,
    cached_detection,
    cached_report,
    combination_rows,
    detection_rows,
    evaluator_means,
    evaluator_rows,
    progress_series,
    table_rows,
)

DIMENSIONS = (*SCORE_DIMENSIONS, "composite")


@login_required
def analytics(request, slug):
    project = get_managed_project(request.user, slug)
    include_simulated = request.GET.get("simulated") == "1"
    source = label_source(project, include_simulated=include_simulated)
    dimension = request.GET.get("dimension", "composite")
    if dimension not in DIMENSIONS:
        dimension = "composite"
    report = cached_report(project, source)
    data = cached_analytics(project, source)
    context = {"project": project, "source": source, "include_simulated": include_simulated,
               "dimension": dimension, "dimensions": DIMENSIONS, "tables": TABLES, "table_formats": TABLE_FORMATS,
               "agreement": _agreement_context(report), "n_boot": report.n_boot,
               "jobs": project.jobs.filter(kind=Job.Kind.EXPORT)[:5], "evaluators": evaluators_of(project)}
    table = data.table()
    if table is not None:
        frame = table.by_domain[dimension]
        context["heatmap"] = plots.heatmap([str(i) for i in frame.index], [str(c) for c in frame.columns],
                                           frame.to_numpy().tolist())
        context["summarizers"] = table_rows(project, source, "summarizers")
    errors = data.error_types.get("model") or {}
    if errors:
        context["error_bars"] = plots.stacked_bars(errors)
        context["context_bars"] = plots.stacked_bars({**data.error_types["input_type"], **data.error_types["length"]})
    context["error_sentences"] = data.error_sentences
    context["corrections"] = data.corrections_judgments
    context["corrections_majority"] = data.corrections_majority
    series = progress_series(project, source)
    if series:
        context["progress_chart"] = plots.lines(series)
    context.update(_evaluator_context(project, source, context["evaluators"]))
    return render(request, "exports/analytics.html", context)


def _evaluator_context(project, source: str, names: list[str]) -> dict:
    """The evaluator benchmark: correlations (table and plot), sentence-level detection, combinations, runs."""
    rows = {name: evaluator_rows(project, source, name) for name in names}
    points = [{"label": f"{row['evaluator']} {row['dimension']}", "value": _nan(row["summary_pearson"]),
               "ci_low": _nan(row["summary_pearson_ci_low"]), "ci_high": _nan(row["summary_pearson_ci_high"]),
               "cls": f"series-{names.index(row['evaluator']) % plots.SERIES}",
               "title": f"{row['evaluator']} {row['dimension']}: Pearson {_fmt(_nan(row['summary_pearson']))} "
                        f"over {row['summary_n']} summaries"}
              for name in names for row in rows[name] if row["group_by"] == "overall"]
    detection = cached_detection(project, source)
    single = list(detection.single)
    # SBERTScore paper, figure 1: the diagonal is each evaluator alone, above it OR, below it AND.
    matrix = [[_combination_cell(detection, a, b, i, j) for j, b in enumerate(single)] for i, a in enumerate(single)]
    config = backend_config()
    analytics = cached_analytics(project, source)
    return {
        "evaluator_tables": [{"name": name, "overall": [row for row in rows[name] if row["group_by"] == "overall"],
                              "groups": [row for row in rows[name] if row["group_by"] != "overall"],
                              "means": evaluator_means(project, name, analytics)}
                             for name in names],
        "human_scores": analytics.has_scores,
        # Without a single defined correlation the chart would be a column of "undefined": the tables say why.
        "evaluator_chart": plots.intervals(points, low=-1.0, high=1.0)
        if any(not math.isnan(point["value"]) for point in points) else None,
        "detection": detection, "detection_rows": detection_rows(detection),
        "combination_rows": combination_rows(detection), "combination_matrix": list(zip(single, matrix)),
        "combination_names": single,
        "roc_chart": plots.roc_curves({name: list(result.roc) for name, result in detection.single.items()
                                       if result.roc}) if any(r.roc for r in detection.single.values()) else None,
        "evaluator_names": EVALUATOR_NAMES,
        "evaluator_backends": list(dict.fromkeys([config.llm_backend, *config.llm_voter_backends])),
        "evaluator_jobs": project.jobs.filter(kind=Job.Kind.EVALUATOR)[:5],
    }


def _combination_cell(detection, a: str, b: str, i: int, j: int) -> dict:
    if a == b:
        return {"text": _fmt(detection.single[a].balanced_accuracy), "diagonal": True,
                "title": f"{a} alone: balanced accuracy on the test half"}
    rule = "or" if i < j else "and"
    result = detection.combined[(a, b) if a < b else (b, a)][rule]
    meaning = ("consistent when at least one says so" if rule == "or" else "consistent only when both say so")
    return {"text": _fmt(result.balanced_accuracy), "diagonal": False,
            "title": f"{a} {rule.upper()} {b} ({meaning}): balanced accuracy on {result.n_test} test sentences"}


def _nan(value) -> float:
    return math.nan if value is None else value


def _agreement_context(report) -> list[dict]:
    tasks = []
    for task in (Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT):
        rows = report.for_task(task)
        if not rows:
            continue
        points = [{"label": "overall" if row.breakdown == "overall" else row.group, "value": row.primary.value,
                   "ci_low": row.primary.ci_low, "ci_high": row.primary.ci_high,
                   "cls": "series-1" if row.breakdown == "overall" else "series-0",
                   "title": f"{row.group}: {_fmt(row.primary.value)} ({row.n_units} units)"}
                  for row in rows if row.breakdown in ("overall", "domain")]
        table = [{"name": "overall" if row.breakdown == "overall" else f"{row.breakdown}: {row.group}",
                  "overall": row.breakdown == "overall", "n_units": row.n_units, "n_ratings": row.n_ratings,
                  "primary": _fmt(row.primary.value), "secondary": _fmt(row.secondary.value),
                  "interval": f"[{_fmt(row.primary.ci_low)}, {_fmt(row.primary.ci_high)}]"
                  if not math.isnan(row.primary.ci_low) else "—"} for row in rows]
        tasks.append({"task": task, "label": task.label, "rows": table, "reference": PAPER_REFERENCE[task],
                      "primary": COEFFICIENT_NAMES[rows[0].primary.coefficient],
                      "secondary": COEFFICIENT_NAMES[rows[0].secondary.coefficient],
                      "chart": plots.intervals(points, reference=PAPER_REFERENCE[task])})
    return tasks


def _fmt(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.3f}"


@login_required
def table_csv(request, slug, table):
    project = get_managed_project(request.user, slug)
    if table not in TABLES and not table.startswith("evaluator-"):
        raise Http404("No such table")
    source = label_source(project, include_simulated=request.GET.get("simulated") == "1")
    rows = table_rows(project, source, table, dimension=request.GET.get("dimension", "composite"))
    if rows is None:
        raise Http404("No such table")
    buffer = io.StringIO()
    write_rows(buffer, rows)
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-{table}.csv"'
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
        messages.success(request, f"Imported {name!r} scores for {count} summaries.")
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
    running = project.jobs.filter(kind=Job.Kind.EVALUATOR, status__in=[Job.Status.QUEUED, Job.Status.RUNNING],
                                  result__evaluator=evaluator).first()
    if running:
        messages.info(request, f"A {evaluator} run is already in progress: its progress shows below.")
        return redirect(anchor)
    try:
        evaluator_run_start(project=project, evaluator=evaluator, backend=backend, user=request.user)
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
        card=bool(request.POST.get("card")), include_simulated=bool(request.POST.get("include_simulated")))
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
    job = get_object_or_404(project.jobs.filter(kind=Job.Kind.EXPORT, status=Job.Status.DONE), pk=pk)
    if name not in job.result.get("files", []):
        raise Http404("No such file")
    path = Path(job.result["directory"]) / name
    if not path.is_file():
        raise Http404("The file is gone")
    return FileResponse(path.open("rb"), as_attachment=True, filename=name)
