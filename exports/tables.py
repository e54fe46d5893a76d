"""The analytics tables the pages draw and offer as CSV, computed once and cached until the labels change."""

import hashlib
import math

from django.core.cache import cache
from django.db.models import Count, Max
from django.db.models.functions import TruncDate, TruncHour

from annotation.models import Project

from .analytics import Analytics, project_analytics
from .evaluators import DIMENSIONS as EVALUATOR_DIMENSIONS
from .evaluators import benchmark
from .models import EvaluatorScore
from .report import AgreementReport, agreement_report
from .selectors import analysis_labels

TABLES = ("agreement", "summarizers", "scores", "error-types", "corrections", "progress")
CACHE_SECONDS = 3600


def _state(project: Project, source: str) -> str:
    """Changes whenever a counted label, a grade or an evaluator score changes: the cache key's version."""
    labels = analysis_labels(project, source).aggregate(n=Count("pk"), last=Max("updated_at"))
    scores = EvaluatorScore.objects.filter(project=project).aggregate(n=Count("pk"), last=Max("imported"))
    state = f"{labels['n']}-{labels['last']}-{scores['n']}-{scores['last']}"
    return hashlib.sha256(state.encode()).hexdigest()[:16]


def cached_analytics(project: Project, source: str) -> Analytics:
    key = f"exports:analytics:{project.pk}:{source}:{_state(project, source)}"
    return cache.get_or_set(key, lambda: project_analytics(project, source=source), CACHE_SECONDS)


def cached_report(project: Project, source: str) -> AgreementReport:
    key = f"exports:agreement:{project.pk}:{source}:{_state(project, source)}"
    return cache.get_or_set(key, lambda: agreement_report(project, source=source), CACHE_SECONDS)


def _clean(value):
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 4)
    return value


def progress_series(project: Project, source: str) -> dict[str, list[tuple[str, int]]]:
    """Cumulative counted labels per task and day of submission (per hour while the work fits in one day)."""
    labels = analysis_labels(project, source).order_by()
    days = labels.values(day=TruncDate("assignment__submitted_at")).distinct()[:2].count()
    trunc = TruncDate("assignment__submitted_at") if days > 1 else TruncHour("assignment__submitted_at")
    rows = labels.values("unit__task", day=trunc).annotate(n=Count("pk")).order_by("day")
    series: dict[str, list[tuple[str, int]]] = {}
    totals: dict[str, int] = {}
    for row in rows:
        task = row["unit__task"]
        totals[task] = totals.get(task, 0) + row["n"]
        day = row["day"] if days > 1 else row["day"].strftime("%Y-%m-%d %H:00")
        series.setdefault(task, []).append((str(day), totals[task]))
    return series


def evaluator_rows(project: Project, source: str, evaluator: str) -> list[dict]:
    results = benchmark(project, evaluator, cached_analytics(project, source))
    rows = []
    for dimension in EVALUATOR_DIMENSIONS:
        if dimension not in results:
            continue
        result = results[dimension]
        for domain, levels in [("overall", result.overall), *result.by_domain.items()]:
            rows.append({"evaluator": evaluator, "dimension": dimension, "domain": domain,
                         "summary_pearson": _clean(levels.summary_level.statistic),
                         "summary_p": _clean(levels.summary_level.p_value), "summary_n": levels.summary_level.n,
                         "system_spearman": _clean(levels.system_level.statistic),
                         "system_p": _clean(levels.system_level.p_value), "system_n": levels.system_level.n,
                         "note": levels.summary_level.reason or levels.system_level.reason})
    return rows


def table_rows(project: Project, source: str, table: str, dimension: str = "composite") -> list[dict] | None:
    """The rows of one table (CSV download and page tables); None for an unknown table."""
    if table == "agreement":
        return [row.flat() for row in cached_report(project, source).rows]
    if table.startswith("evaluator-"):
        return evaluator_rows(project, source, table.removeprefix("evaluator-"))
    if table == "progress":
        return [{"task": task, "day": day, "cumulative_labels": n}
                for task, points in progress_series(project, source).items() for day, n in points]
    data = cached_analytics(project, source)
    if table == "summarizers":
        frame = data.summarizer_table()
        return [{"summarizer": model, **{k: _clean(v) for k, v in values.items()}}
                for model, values in frame.to_dict("index").items()]
    if table == "scores":
        score_table = data.table()
        if score_table is None or dimension not in score_table.by_domain:
            return []
        frame = score_table.by_domain[dimension]
        return [{"summarizer": model, **{str(k): _clean(v) for k, v in values.items()}}
                for model, values in frame.to_dict("index").items()]
    if table == "error-types":
        return [{"group_by": group_by, "group": group, "error_type": name, "share": round(share, 4)}
                for group_by, groups in data.error_types.items() for group, shares in groups.items()
                for name, share in shares.items()]
    if table == "corrections":
        return [{"pairs": name, "ai_error": rates.ai_error, "ai_error_corrected": rates.ai_error_corrected,
                 "ai_error_correction_rate": _clean(rates.ai_error_correction_rate),
                 "ai_no_error": rates.ai_no_error, "ai_no_error_corrected": rates.ai_no_error_corrected,
                 "ai_no_error_correction_rate": _clean(rates.ai_no_error_correction_rate)}
                for name, rates in (("per judgment", data.corrections_judgments),
                                    ("per sentence (majority)", data.corrections_majority))]
    return None
