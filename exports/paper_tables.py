"""The paper's result tables that the labels determine, in its layout and rounding, for a researcher to paste.

Table 2 (agreement per task and domain), figure 3 as a table (each summarizer's rank in the five dimensions), table 4
(scores by input type and length), table 5 (redaction), table 13 (faithfulness against abstractiveness), tables 14-17
(each dimension per summarizer and domain, with the summarizer's average, its domain stability and each domain's
average), the share of source texts for which at least one summarizer hallucinates (section 4.1) and the error types
per summarizer (section 5.4, figure 4). The numbers come from exports.scores over an Analytics and from the agreement
report; this module only lays them out. Each table is plain JSON (stored with the analytics figures, drawn by the
page, written by the card) with a one-line caption, headers in levels as the paper groups them, and rows whose numbers
are rounded as the paper prints them: percent with one decimal, agreement and correlations with two.
"""

import dataclasses
import math
from collections import defaultdict

from django.db.models import Avg, Count
from scipy import stats

from annotation.models import ErrorType, Task
from corpus.models import Document, Project

from .analytics import Analytics
from .report import AgreementReport
from .scores import SCORE_DIMENSIONS, context_table, hallucinated_sources, summary_has_error

# The CSV names of these tables (exports.views serves them from the stored figures), in the order the page, the card
# and the README give them: the paper's numbered tables and figure in its order, then its two section-level numbers.
PAPER_TABLES = ("agreement-by-domain", "summarizer-ranks", "context-scores", "redaction",
                "faithfulness-abstractiveness", "domain-table", "hallucinated-sources", "error-types-by-summarizer")
# How datasets mark a text whose personal details were replaced by placeholders: the UniSumEval release writes
# "redact" (and "unredact" for the others), the redact command "redacted".
REDACTED = ("redact", "redacted", "redaction", "yes", "true")
DOMAIN_DIMENSIONS = (*SCORE_DIMENSIONS, "composite")
SHORT_NAMES = {"faithfulness": "Faith", "completeness": "Comp", "conciseness": "Conc", "composite": "Composite"}
INPUT_TYPES = {"non-dialogue": "Non-dialogue", "dialogue": "Dialogue"}
LENGTHS = {"short": "Short", "long": "Long"}
# Figure 4's abbreviations, in its order: the extrinsic error first, then the intrinsic ones.
ERROR_TYPE_NAMES = {ErrorType.OUT_OF_ARTICLE: "OutE", ErrorType.ENTITY: "EntE", ErrorType.RELATION: "RelE",
                    ErrorType.SENTENCE: "SenE"}
DOMAIN_TABLE_NUMBERS = {"faithfulness": 14, "completeness": 15, "conciseness": 16, "composite": 17}
# Table 2's first three columns per task, in the paper's words.
AGREEMENT_TASKS = {Task.FACT_VERIFICATION: ("Faithfulness", "Sentence level"),
                   Task.KEYFACT_VALIDATION: ("Completeness & conciseness", "Key-fact level"),
                   Task.KEYFACT_ALIGNMENT: ("Completeness & conciseness", "Key-fact level")}
# Figure 3's five dimensions: the summarizer table's column and its name.
RANKED = {"faithfulness": "Faithfulness", "completeness": "Completeness", "conciseness": "Conciseness",
          "domain_stability": "Domain stability", "abstractiveness": "Abstractiveness"}
SIGNIFICANCE = 0.05
# Table 13's correlation needs a few summaries: with fewer than three, a Pearson coefficient is 1, -1 or undefined.
MIN_CORRELATED = 3


@dataclasses.dataclass
class PaperTable:
    """`columns`: one tuple of header levels per column, all of one depth (the paper's grouped headers, top level
    first); `rows`: per row its label then its values (a number, a text or None); `total`: the rows below a rule
    (the paper's averages)."""

    caption: str
    columns: list[tuple[str, ...]]
    rows: list[list]
    total: int = 0
    note: str = ""
    # Decimals of each column's numbers (one number for all), and how many columns at the left name the row.
    decimals: int | list[int] = 1
    labels: int = 1

    def as_json(self) -> dict:
        decimals = self.decimals if isinstance(self.decimals, list) else [self.decimals] * len(self.columns)
        return {"caption": self.caption, "columns": [list(column) for column in self.columns], "rows": self.rows,
                "total": self.total, "note": self.note, "decimals": decimals, "labels": self.labels}


def source_lengths(project: Project) -> dict[str, dict]:
    """Short or long per source dataset, as the paper classifies texts: a source whose documents average fewer words
    than the threshold (900) is short, otherwise long (appendix A and the caption of table 2). A property of the
    source, not of each document: a long CNN/DM article stays with the short news texts."""
    threshold = project.long_threshold_words
    rows = Document.objects.filter(project=project).values("source").annotate(words=Avg("word_count")).order_by()
    return {row["source"]: {"words": row["words"], "length": "long" if row["words"] >= threshold else "short"}
            for row in rows}


def redacted_texts(project: Project) -> set[str]:
    """The uids of the project's redacted source texts."""
    return {uid for uid, kind in Document.objects.filter(project=project).exclude(redact_type="")
            .values_list("uid", "redact_type") if kind.strip().lower() in REDACTED}


def domain_lengths(project: Project) -> dict[str, dict]:
    """Per domain: its documents' average words, short or long by the project's threshold (the caption of table 2
    classifies each domain, "subset", this way) and its input type (the one most of its documents have)."""
    threshold = project.long_threshold_words
    documents = Document.objects.filter(project=project).order_by()
    domains = {row["domain"]: {"words": row["words"], "length": "long" if row["words"] >= threshold else "short",
                               "input_type": ""}
               for row in documents.values("domain").annotate(words=Avg("word_count"))}
    for row in documents.values("domain", "input_type").annotate(n=Count("pk")).order_by("n", "input_type"):
        domains[row["domain"]]["input_type"] = row["input_type"]  # the commonest comes last
    return domains


def paper_tables(analytics: Analytics, lengths: dict[str, dict], redacted: set[str] | None = None, *,
                 report: AgreementReport | None = None, domains: dict[str, dict] | None = None) -> dict:
    """Every table of this module as JSON, keyed as PAPER_TABLES (in their order); the score tables are missing
    before any score, the redaction table without a redacted text, table 2 without a report holding annotators'
    labels (`domains`: domain_lengths)."""
    tables: dict = {}
    if report is not None and any(row.breakdown == "domain" for row in report.rows):
        tables["agreement-by-domain"] = agreement_table(report, domains or {}).as_json()
    if analytics.has_scores:
        tables["summarizer-ranks"] = rank_table(analytics).as_json()
        tables["context-scores"] = context_score_table(analytics, lengths).as_json()
        if redacted:
            tables["redaction"] = redaction_table(analytics, redacted).as_json()
        tables["faithfulness-abstractiveness"] = abstractiveness_table(analytics).as_json()
        tables["domain-table"] = {dimension: domain_table(analytics, dimension).as_json()
                                  for dimension in DOMAIN_DIMENSIONS}
    tables["hallucinated-sources"] = hallucination_table(analytics).as_json()
    tables["error-types-by-summarizer"] = error_type_table(analytics).as_json()
    return tables


def missing_tables(tables: dict) -> list[str]:
    """One line for each table the labels at hand do not determine, saying why."""
    lines = []
    if "agreement-by-domain" not in tables:
        lines.append("Table 2 (agreement per domain) needs two annotators' labels on a unit: there are none yet, or "
                     "the labels are a release's majority labels.")
    if "summarizer-ranks" not in tables:
        lines.append("Figure 3, tables 4, 5, 13 and 14-17 need scores: no summary has one yet.")
    return lines


def agreement_table(report: AgreementReport, domains: dict[str, dict]) -> PaperTable:
    """Table 2: per task, the agreement in each domain (short domains, then long ones) and its mean over the
    domains, the paper's "Avg. IAA" (its 0.88 and 0.58 are exactly the mean of its nine domains)."""
    values: dict[str, dict[str, float | None]] = defaultdict(dict)
    overall: dict[str, float | None] = {}
    for row in report.rows:
        value = None if math.isnan(row.primary.value) else row.primary.value
        if row.breakdown == "domain":
            values[row.task][row.group] = value
        elif row.breakdown == "overall":
            overall[row.task] = value
    seen = sorted({domain for by_domain in values.values() for domain in by_domain})
    order = [*INPUT_TYPES, *_others((domains.get(d, {}).get("input_type", "") for d in seen), INPUT_TYPES)]

    def place(domain: str) -> tuple:
        info = domains.get(domain, {})
        kind = info.get("input_type", "")
        return (info.get("length") != "short", order.index(kind) if kind in order else len(order), domain)

    named = sorted(seen, key=place)
    columns = [("", "Evaluation dim."), ("", "Annotation task"), ("", "Granularity"),
               *[(LENGTHS.get(domains.get(domain, {}).get("length"), ""), domain) for domain in named],
               ("", "Avg. IAA")]
    rows = []
    for task, (dimension, granularity) in AGREEMENT_TASKS.items():
        if task not in values:
            continue
        cells = [values[task].get(domain) for domain in named]
        defined = [value for value in cells if value is not None]
        rows.append([dimension, Task(task).label, granularity, *[_two(value) for value in cells],
                     _two(sum(defined) / len(defined)) if defined else None])
    pooled = "; ".join(f"{Task(task).label.lower()} {_two(value):.2f}" for task, value in overall.items()
                       if value is not None)
    words = "; ".join(f"{domain} {domains[domain]['length']} ({domains[domain]['words']:,.0f} words)"
                      for domain in named if domain in domains)
    return PaperTable(
        caption="Table 2: agreement of the human labels per task and domain (Krippendorff's alpha; Gwet's AC1 for "
                "key-fact validation), on each unit's first two counted labels; Avg. IAA is the mean over domains.",
        columns=columns, rows=rows, decimals=2, labels=3,
        note=f"Pooled over all units instead: {pooled or 'none'}. Short/long by each domain's average word count: "
             f"{words}.")


def rank_table(analytics: Analytics) -> PaperTable:
    """Figure 3 as a table: each summarizer's rank in each dimension, 1 the best (the highest score), ranked on the
    values the summarizer table prints (one decimal), so that the ranks can be checked against it; ties share the
    better rank."""
    frame = analytics.summarizer_table()
    ranks = {column: frame[column].rank(method="min", ascending=False) for column in RANKED}
    rows = [[model, *[None if math.isnan(ranks[column][model]) else int(ranks[column][model]) for column in RANKED]]
            for model in frame.index]
    return PaperTable(
        caption="Figure 3: rank (1 = best) of each summarizer in faithfulness, completeness, conciseness, domain "
                "stability (of the composite score) and abstractiveness (mean novel 1/3/5-gram ratio).",
        columns=[("Summarizer",), *[(name,) for name in RANKED.values()]], rows=rows, decimals=0,
        note="Ranked on the scores of the summarizer table as printed (one decimal); ties share the better rank; a "
             "dash where a summarizer has no score.")


def abstractiveness_table(analytics: Analytics) -> PaperTable:
    """Table 13: Pearson's correlation between the faithfulness and the abstractiveness of summaries, over each
    summarizer's summaries and over all. The paper pools summarizers by kind (non-LLM, open-source LLM, proprietary
    LLM); a summarizer's kind is not in the data, so each summarizer has its own row."""
    frame = analytics.summaries[["model", "faithfulness", "abstractiveness"]].dropna()
    groups = [(str(model), part) for model, part in frame.groupby("model", sort=True)]
    rows = [_correlation_row(name, part) for name, part in [*groups, ("All summarizers", frame)]]
    return PaperTable(
        caption="Table 13: Pearson correlation between the faithfulness and the abstractiveness of summaries, per "
                "summarizer and over all (* p < 0.05).",
        columns=[("Summarizer",), ("ρ",), ("p < 0.05",), ("p",), ("Summaries",)], rows=rows, total=1,
        decimals=[0, 2, 0, 4, 0],
        note="The paper groups summarizers by kind (non-LLM, open-source LLM, proprietary LLM), which the labels do "
             "not say: here each summarizer has its row. A dash: fewer than three summaries with both scores, or "
             "one of them the same for all.")


def _correlation_row(name: str, part) -> list:
    n = len(part)
    x, y = part["faithfulness"].to_numpy(), part["abstractiveness"].to_numpy()
    if n < MIN_CORRELATED or x.min() == x.max() or y.min() == y.max():
        return [name, None, "", None, n]
    result = stats.pearsonr(x, y)
    p = float(result.pvalue)
    return [name, _two(float(result.statistic)), "*" if p < SIGNIFICANCE else "", round(p, 4), n]


def context_score_table(analytics: Analytics, lengths: dict[str, dict]) -> PaperTable:
    records = analytics.summaries.to_dict("records")
    for record in records:
        record["length"] = lengths.get(record["source"], {}).get("length", record["length"])
    table = context_table(records)
    contexts = [(kind, length) for kind in (*INPUT_TYPES, *_others(table.cells.columns.get_level_values(0),
                                                                    INPUT_TYPES))
                for length in LENGTHS if (kind, length, SCORE_DIMENSIONS[0]) in table.cells.columns]
    columns = [("", "", "Summarizer")]
    columns += [(INPUT_TYPES.get(kind, kind), LENGTHS[length], SHORT_NAMES[dimension])
                for kind, length in contexts for dimension in SCORE_DIMENSIONS]
    columns += [("Avg. score", "model-wise", SHORT_NAMES[dimension]) for dimension in SCORE_DIMENSIONS]
    rows = [[model, *[_one(table.cells.loc[model, (kind, length, dimension)])
                      for kind, length in contexts for dimension in SCORE_DIMENSIONS],
             *[_one(table.model_average.loc[model, dimension]) for dimension in SCORE_DIMENSIONS]]
            for model in table.cells.index]
    rows.append(["Avg. score (context-wise)",
                 *[_one(table.context_average[(kind, length, dimension)])
                   for kind, length in contexts for dimension in SCORE_DIMENSIONS],
                 *[_one(table.overall[dimension]) for dimension in SCORE_DIMENSIONS]])
    named = sorted(lengths.items(), key=lambda item: (item[1]["length"] != "short", item[0]))
    note = "Short/long by each source's average word count: " + "; ".join(
        f"{source} {info['length']} ({info['words']:,.0f} words)" for source, info in named) + "."
    return PaperTable(
        caption="Table 4: faithfulness (Faith), completeness (Comp) and conciseness (Conc) scores (%) of each "
                "summarizer by input type and length; averages over contexts (model-wise) and over summarizers "
                "(context-wise).",
        columns=columns, rows=rows, total=1, note=note)


def domain_table(analytics: Analytics, dimension: str) -> PaperTable:
    scores = analytics.table()
    frame = scores.by_domain[dimension]
    domains = _domains_by_input_type(analytics, [str(domain) for domain in frame.columns])
    columns = [("", "Summarizer"), *[(INPUT_TYPES.get(kind, kind), domain) for kind, domain in domains],
               ("", "Avg. score"), ("", "DoS")]
    rows = [[model, *[_one(frame.loc[model, domain]) for _, domain in domains],
             _one(scores.overall.loc[model, dimension]), _one(scores.domain_stability.loc[model, dimension])]
            for model in frame.index]
    average = scores.domain_average(dimension)
    rows.append(["Avg. score in domain", *[_one(average[domain]) for _, domain in domains], None, None])
    return PaperTable(
        caption=f"Table {DOMAIN_TABLE_NUMBERS[dimension]}: {dimension} scores (%) of each summarizer across the "
                f"domains; Avg. score is the mean over domains, DoS the domain stability (100 minus the gap between "
                f"its highest and lowest domain).",
        columns=columns, rows=rows, total=1)


def redaction_table(analytics: Analytics, redacted: set[str]) -> PaperTable:
    """Faithfulness of each summarizer on the redacted texts beside the texts left as they were in the same domains
    (table 5: the booking conversations of MultiWOZ, with and without their personal details), with the change."""
    frame = analytics.summaries
    is_redacted = frame["uid"].isin(redacted)
    domains = set(frame.loc[is_redacted, "domain"])
    same = frame[frame["domain"].isin(domains)].assign(redacted=is_redacted)
    means = same.groupby(["model", "redacted"])["faithfulness"].mean().mul(100).unstack("redacted")
    rows = []
    for model in means.index:
        before, after = _one(means.loc[model].get(False)), _one(means.loc[model].get(True))
        rows.append([model, before, after, None if before is None or after is None else _one(after - before)])
    return PaperTable(
        caption="Table 5: faithfulness (%) of each summarizer on the unredacted texts and on the redacted texts of "
                "the same domains, and the change redaction brings.",
        columns=[("Summarizer",), ("Unredaction",), ("Redaction",), ("Change",)], rows=rows,
        note=f"Domains: {', '.join(sorted(map(str, domains)))}; {int((~same['redacted']).sum())} summaries of "
             f"unredacted texts, {int(is_redacted.sum())} of redacted ones.")


def hallucination_table(analytics: Analytics) -> PaperTable:
    """Per domain and overall, the source texts for which at least one summary has a sentence the majority judged
    a factual error (the paper's check that its hallucinogenic selection worked, section 4.1)."""
    sentences: dict[tuple, list] = defaultdict(list)
    for (uid, model, _index), label in analytics.sentence_labels.items():
        sentences[uid, model].append(None if label is None else bool(label))
    by_text: dict[str, list] = defaultdict(list)
    for (uid, _model), flags in sentences.items():
        by_text[uid].append(summary_has_error(flags))
    domains = dict(zip(analytics.summaries["uid"], analytics.summaries["domain"]))
    groups: dict[str, dict] = defaultdict(dict)
    for uid, flags in by_text.items():
        groups[str(domains.get(uid, ""))][uid] = flags
    rows = []
    for domain in sorted(groups):
        rows.append(_share_row(domain, hallucinated_sources(groups[domain])))
    rows.append(_share_row("All", hallucinated_sources(by_text)))
    return PaperTable(
        caption="Source texts (%) for which at least one summarizer hallucinates: some summary of the text has a "
                "sentence the majority judged a factual error (the paper, 4.1: 93.3%).",
        columns=[("Domain",), ("Source texts",), ("Hallucinated",), ("Share (%)",), ("Undecided",)],
        rows=rows, total=1,
        note="Undecided: no error found yet and some sentence still without a majority label; left out of the share.")


def error_type_table(analytics: Analytics) -> PaperTable:
    shares = analytics.error_types.get("model") or {}
    seen = {name for groups in shares.values() for name in groups}
    names = [name for name in ERROR_TYPE_NAMES if name in seen] + sorted(seen - set(ERROR_TYPE_NAMES))
    erroneous: dict = defaultdict(int)
    for (_uid, model, _index), label in analytics.sentence_labels.items():
        erroneous[model] += bool(label)
    models = sorted({*analytics.summaries["model"], *shares}, key=str)
    rows = [[model, erroneous[model], *[_one(100 * shares[model][name]) if shares.get(model) else None
                                         for name in names]]
            for model in models]
    return PaperTable(
        caption="Factual error types (%) per summarizer: the share of each type among the types annotators gave "
                "the sentences the majority judged erroneous (paper 5.4, figure 4).",
        columns=[("Summarizer",), ("Erroneous sentences",), *[(ERROR_TYPE_NAMES.get(name, name),) for name in names]],
        rows=rows, note="OutE: out-of-article error (extrinsic); EntE, RelE, SenE: entity, relation and sentence "
                        "errors (intrinsic).")


def _share_row(group: str, share) -> list:
    return [group, share.decided + share.undecided, share.hallucinated,
            None if share.share is None else _one(100 * share.share), share.undecided]


def _domains_by_input_type(analytics: Analytics, domains: list[str]) -> list[tuple[str, str]]:
    """The domains grouped as the paper's tables group them: non-dialogue first, then dialogue, each by name."""
    kinds: dict[str, str] = {}
    counts = analytics.summaries.groupby(["domain", "input_type"]).size()
    for (domain, kind), _n in counts.sort_values(ascending=False).items():
        kinds.setdefault(str(domain), str(kind))
    order = [*INPUT_TYPES, *_others(kinds.values(), INPUT_TYPES)]
    return sorted(((kinds.get(domain, ""), domain) for domain in domains),
                  key=lambda pair: (order.index(pair[0]) if pair[0] in order else len(order), pair[1]))


def _others(values, known) -> list[str]:
    return sorted({str(value) for value in values} - set(known))


def _two(value) -> float | None:
    """Agreement and correlations with two decimals, as the paper prints them."""
    return None if value is None or math.isnan(value) else round(float(value), 2)


def _one(value) -> float | None:
    """Percent with one decimal, as the paper prints it; None where a cell has no score."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(float(value), 1)


def csv_rows(table: dict) -> list[dict]:
    """The table's rows keyed by their headers joined (e.g. "Non-dialogue Short Faith")."""
    names = [" ".join(level for level in column if level) for column in table["columns"]]
    return [dict(zip(names, row)) for row in table["rows"]]


def header_rows(table: dict) -> list[list[dict]]:
    """The header levels with the paper's grouping: a cell spans the next columns with the same header above it."""
    columns = table["columns"]
    depth = len(columns[0]) if columns else 0
    levels = []
    for level in range(depth):
        cells: list[dict] = []
        for index, column in enumerate(columns):
            if cells and columns[index - 1][: level + 1] == column[: level + 1]:
                cells[-1]["span"] += 1
            else:
                cells.append({"text": column[level], "span": 1})
        levels.append(cells)
    return levels


def markdown(table: dict) -> list[str]:
    """The table in Markdown, headers joined into one row (Markdown has no spanning cells), then its caption."""
    names = [escape_markdown(" ".join(level for level in column if level)) for column in table["columns"]]
    decimals = table.get("decimals") or [1] * len(names)
    lines = ["| " + " | ".join(names) + " |", "|" + " --- |" * len(names)]
    lines += ["| " + " | ".join(escape_markdown(cell(value, digits)) for value, digits in zip(row, decimals)) + " |"
              for row in table["rows"]]
    lines += ["", table["caption"] + (" " + table["note"] if table["note"] else "")]
    return lines


def cell(value, decimals: int = 1) -> str:
    """A cell as the page and the card print it: numbers with the column's decimals, a dash for no value."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{decimals}f}"
    return str(value)


def escape_markdown(text: str) -> str:
    """A summarizer or domain name with a pipe or a line break would end a Markdown cell or row early."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
