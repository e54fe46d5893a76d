"""The dataset card (Markdown) that goes with a benchmark export: what is in it, how it was made, how good it is."""

import math

from django.db.models import Count
from django.utils import timezone

from annotation.models import Task
from corpus.models import Document, KeyFact, Project, Summary, SummarySentence

from .analytics import Analytics
from .paper_tables import (
    domain_lengths,
    escape_markdown,
    markdown,
    missing_tables,
    paper_tables,
    redacted_texts,
    source_lengths,
)
from .report import ALL_LABELS, COEFFICIENT_NAMES, HEADLINE_LABELS, PAPER_REFERENCE, AgreementReport
from .scores import TIE_BREAK
from .selectors import analysis_labels


def _num(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}"


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(escape_markdown(str(cell)) for cell in row) + " |" for row in rows]
    return lines


SOURCE_NOTES = {
    "simulated": " These labels are SIMULATED (simulate_annotations), not human judgments.",
    "real+simulated": " These labels are SIMULATED (simulate_annotations), not human judgments.",
    "release": " These are the majority labels and human scores of a published release (import_release), as it "
               "published them: there are no annotator-level labels behind them here, so no agreement is computed.",
}


def dataset_card(project: Project, analytics: Analytics, report: AgreementReport, n_rows: int, *,
                 evaluators: dict | None = None, dawid_skene: dict | None = None) -> str:
    documents = Document.objects.filter(project=project)
    labels = analysis_labels(project, analytics.label_source)
    by_task = dict(labels.order_by().values_list("unit__task").annotate(n=Count("pk")))
    counts = [
        ["documents", documents.count()], ["domains", documents.values("domain").distinct().count()],
        ["summaries (rows)", n_rows], ["summarizers", Summary.objects.filter(document__project=project)
                                        .values("model").distinct().count()],
        ["summary sentences", SummarySentence.objects.filter(summary__document__project=project).count()],
        ["candidate key-facts", KeyFact.objects.filter(document__project=project)
         .exclude(origin=KeyFact.Origin.HUMAN).count()],
        ["human key-facts", KeyFact.objects.filter(document__project=project, status=KeyFact.Status.ACCEPTED).count()],
        ["annotators", labels.values("annotator_id").distinct().count()],
        *[[f"labels: {Task(task).label.lower()}", by_task.get(task, 0)] for task in Task.values],
    ]
    lines = [f"# {project.name}: dataset card", "",
             f"Exported {timezone.now():%Y-%m-%d %H:%M} UTC by finegrain from project `{project.slug}`, following the "
             "UniSumEval annotation protocol.", "",
             f"**Labels read: {analytics.label_source}.**" + SOURCE_NOTES.get(analytics.label_source, ""),
             "", "## Counts", "", *_table(["", "count"], counts), "",
             "## How labels were aggregated", "",
             "- Counted labels only: attention-check answers and the labels of failed submissions are excluded "
             "(attention-check outcomes are exported in a separate file).",
             "- Majority vote per unit (exports.scores.TIE_BREAK); a tie, possible only when a rating is missing, "
             f"counts as {_tie('fv')} in fact verification, {_tie('kv')} in key-fact validation and "
             f"{_tie('ka')} in key-fact alignment.",
             "- Scores per summary (paper appendix D.1): faithfulness, completeness, conciseness; composite = the "
             "mean of the three. A score is empty (null) when a label it needs is missing or the document has no "
             "human key-fact; the composite is then empty too, never faithfulness alone (such summaries keep their "
             "faithfulness score). A summarizer's composite is the mean over the domains that have one.",
             "- Annotators appear under pseudonyms derived from a random per-annotator id.", "",
             "## Inter-annotator agreement", "",
             "Krippendorff's alpha (nominal) for fact verification and key-fact alignment, Gwet's AC1 for key-fact "
             f"validation; 95% percentile bootstrap intervals ({report.n_boot} resamples over units).", "",
             f"The headline reads the {HEADLINE_LABELS} (in the order their submissions counted): comparable with "
             "fixed designs and with the paper, whatever number of labels a unit got. Beside it, the same "
             f"coefficients over {ALL_LABELS}, which depend on how many labels each unit got.", ""]
    rows = []
    for row in report.rows:
        if row.breakdown not in ("overall", "domain"):
            continue
        group = "overall" if row.breakdown == "overall" else row.group
        rows.append([Task(row.task).label, group, row.n_units, row.n_ratings,
                     f"{COEFFICIENT_NAMES[row.primary.coefficient]} {_num(row.primary.value)} "
                     f"[{_num(row.primary.ci_low)}, {_num(row.primary.ci_high)}]",
                     f"{COEFFICIENT_NAMES[row.secondary.coefficient]} {_num(row.secondary.value)}",
                     _num(PAPER_REFERENCE[row.task], 2) if row.breakdown == "overall" else "",
                     row.n_ratings_all,
                     f"{_num(row.primary_all.value)} [{_num(row.primary_all.ci_low)}, {_num(row.primary_all.ci_high)}]",
                     _num(row.secondary_all.value)])
    lines += _table(["task", "group", "units", "ratings (first two)", "primary, first two [95% CI]",
                     "secondary, first two", "paper", "ratings (all)", "primary, all labels [95% CI]",
                     "secondary, all labels"], rows)
    lines += ["", "## Scores per summarizer (%)", ""]
    table = analytics.summarizer_table()
    if table.empty:
        lines.append("No scores yet.")
    else:
        lines += _table(["summarizer", "faithfulness", "completeness", "conciseness", "composite",
                         "domain stability", "abstractiveness"],
                        [[model, *[_num(value, 1) for value in values]] for model, values in
                         zip(table.index, table[["faithfulness", "completeness", "conciseness", "composite",
                                                 "domain_stability", "abstractiveness"]].to_numpy().tolist())])
        composite = analytics.table().by_domain["composite"]
        lines += ["", "## Composite score per summarizer and domain (%)", ""]
        lines += _table(["summarizer", *map(str, composite.columns)],
                        [[model, *[_num(v, 1) for v in values]] for model, values in
                         zip(composite.index, composite.to_numpy().tolist())])
    lines += ["", *_paper_table_lines(project, analytics, report)]
    rates = analytics.corrections_judgments
    lines += ["", "## AI assistance", "",
              f"Of the AI's error flags, {_num(_pct(rates.ai_error_correction_rate), 1)}% were overruled by "
              f"annotators; of its no-error verdicts, {_num(_pct(rates.ai_no_error_correction_rate), 1)}% were "
              "(per annotator judgment; paper 4.1 reports 19.31% and 2.59%).", ""]
    if dawid_skene:
        lines += _dawid_skene_lines(dawid_skene)
    if evaluators:
        lines += _evaluator_lines(evaluators)
    return "\n".join(lines) + "\n"


def _paper_table_lines(project: Project, analytics: Analytics, report: AgreementReport) -> list[str]:
    """The paper's result tables (exports.paper_tables), in its layout and rounding, each under its caption, and a
    line for each the labels do not determine."""
    tables = paper_tables(analytics, source_lengths(project), redacted_texts(project), report=report,
                          domains=domain_lengths(project))
    listed = [table for name, value in tables.items()
              for table in (value.values() if name == "domain-table" else [value])]
    lines = ["## The paper's result tables", "",
             "As the UniSumEval paper lays them out and rounds them (scores in percent with one decimal, agreement "
             "and correlations with two), from the majority labels.", ""]
    for table in listed:
        lines += [*markdown(table), ""]
    lines += [f"Not given: {line}" for line in missing_tables(tables)]
    return [*lines, ""] if missing_tables(tables) else lines


def _dawid_skene_lines(summary: dict) -> list[str]:
    """exports.second_opinion.dawid_skene_summary: the fields it adds to the rows and how often it differs."""
    method = summary["method"]
    rows = [[Task(row["task"]).label, row["units"], row["differs"],
             _num(_pct(row["differs_share"]), 1) + "%" if row["differs_share"] is not None else "—",
             f"yes, {row['iterations']} iterations" if row["converged"]
             else f"NO, stopped at {row['iterations']} iterations"]
            for row in summary["tasks"]]
    return ["## Dawid-Skene, a second opinion", "",
            "Majority vote is the label of record (the paper's). Dawid and Skene's (1979) EM weighs each annotator by "
            "a confusion matrix it estimates from all their labels; it reads the same counted human labels (an AI "
            f"pre-label is never a vote), starts from the majority-vote shares, adds a pseudo-count of "
            f"{method['smoothing']} to every confusion entry, breaks ties as the majority does, and stops once no "
            f"posterior moves by more than {method['tolerance']:g} (at most {method['max_iterations']} iterations).",
            "", "Fields added to each row, beside the release fields (which are unchanged):", "",
            "- `fact_verification_label_dawid_skene`, `fact_verification_posterior_dawid_skene`: per sentence, its "
            "label (1 = error) and P(error), next to `fact_verification_label`.",
            "- `keyfact_validation_label_dawid_skene`, `keyfact_validation_posterior_dawid_skene`: per candidate "
            "key-fact (`pred_keyfact` order), its label (1 = useful) and P(useful), next to "
            "`keyfact_validation_label`.",
            "- `keyfact_alignment_label`: the majority label of each (human key-fact, sentence) pair, rows the "
            "`keyfact` list, columns the sentences (the release gives only `keyfact_label` and `sentence_label`, "
            "derived from it); `keyfact_alignment_label_dawid_skene` and `keyfact_alignment_posterior_dawid_skene`: "
            "its label (1 = aligned) and P(aligned), in the same shape.",
            "- Posteriors are rounded to 4 decimals; an item without a counted label has null, as its majority does.",
            "", *_table(["task", "units", "differs from majority", "share", "converged"], rows), "",
            "Per annotator (pseudonyms): the estimated sensitivity and specificity beside the attention-check pass "
            "rate, in the `.dawid_skene.json` file beside this card.", ""]


def _evaluator_lines(benchmark: dict) -> list[str]:
    """The overall rows of exports.tables.evaluator_benchmark_tables; the full tables are in the JSON file."""
    rows = [[row["evaluator"], row["dimension"], row["evaluator_score"] or "—",
             f"{_num(row['summary_pearson'])} (p {_num(row['summary_pearson_p'], 4)})",
             f"{_num(row['summary_spearman'])} (p {_num(row['summary_spearman_p'], 4)})", row["summary_n"],
             f"{_num(row['system_spearman'])} (p {_num(row['system_p'], 4)})", row["system_n"]]
            for row in benchmark["summary_level"] if row["group_by"] == "overall"]
    lines = ["## Automatic evaluators", "",
             "Correlation with the human scores (per domain and per source dataset in "
             "evaluator_benchmark.json).", "",
             *_table(["evaluator", "human score", "evaluator score", "summary Pearson", "summary Spearman",
                      "summaries", "system Spearman", "systems"], rows), ""]
    sentence = benchmark["sentence_level"]
    if sentence["detection"]:
        lines += [f"Sentence-level error detection: {sentence['split']['description']}.", "",
                  *_table(["evaluator", "threshold", "balanced accuracy", "ROC-AUC", "TN", "FP", "FN", "TP"],
                          [[row["evaluator"], _num(row["threshold"], 4), _num(row["balanced_accuracy"]),
                            _num(row["roc_auc"]), row["tn"], row["fp"], row["fn"], row["tp"]]
                           for row in sentence["detection"]]), ""]
    return lines


def _tie(task: str) -> str:
    names = {"fv": ("an error", "no error"), "kv": ("useful", "not useful"), "ka": ("aligned", "not aligned")}
    return names[task][0] if TIE_BREAK[task] else names[task][1]


def _pct(value):
    return None if value is None else 100 * value
