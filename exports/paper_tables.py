"""The paper's result tables that the labels determine, in its layout and rounding, for a researcher to paste.

Table 4 (scores by input type and length), tables 14-17 (each dimension per summarizer and domain, with the
summarizer's average, its domain stability and each domain's average), the share of source texts for which at least
one summarizer hallucinates (section 4.1) and the error types per summarizer (section 5.4, figure 4). The numbers come
from exports.scores over an Analytics; this module only lays them out. Each table is plain JSON (stored with the
analytics figures, drawn by the page, written by the card) with a one-line caption, headers in levels as the paper
groups them, and rows whose numbers are rounded as the paper prints them: percent with one decimal.
"""

import dataclasses
import math
from collections import defaultdict

from django.db.models import Avg

from annotation.models import ErrorType
from corpus.models import Document, Project

from .analytics import Analytics
from .scores import SCORE_DIMENSIONS, context_table, hallucinated_sources, summary_has_error

# The CSV names of these tables (exports.views serves them from the stored figures).
PAPER_TABLES = ("context-scores", "domain-table", "redaction", "hallucinated-sources", "error-types-by-summarizer")
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

    def as_json(self) -> dict:
        return {"caption": self.caption, "columns": [list(column) for column in self.columns], "rows": self.rows,
                "total": self.total, "note": self.note}


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


def paper_tables(analytics: Analytics, lengths: dict[str, dict], redacted: set[str] | None = None) -> dict:
    """Every table of this module as JSON, keyed as PAPER_TABLES; the score tables are missing before any score,
    the redaction table without a redacted text."""
    tables: dict = {"hallucinated-sources": hallucination_table(analytics).as_json(),
                    "error-types-by-summarizer": error_type_table(analytics).as_json()}
    if analytics.has_scores:
        tables["context-scores"] = context_score_table(analytics, lengths).as_json()
        tables["domain-table"] = {dimension: domain_table(analytics, dimension).as_json()
                                  for dimension in DOMAIN_DIMENSIONS}
        if redacted:
            tables["redaction"] = redaction_table(analytics, redacted).as_json()
    return tables


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
    names = [" ".join(level for level in column if level) for column in table["columns"]]
    lines = ["| " + " | ".join(names) + " |", "|" + " --- |" * len(names)]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in table["rows"]]
    lines += ["", table["caption"] + (" " + table["note"] if table["note"] else "")]
    return lines


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)
