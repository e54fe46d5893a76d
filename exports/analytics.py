"""Score tables, error types and AI correction rates of a project (paper 4.1, 5, D.1, F.1).

Everything is derived from the per-summary results of exports.aggregation in one pass, by the tested
functions of exports.scores: score_table (summarizer x domain, domain stability), abstractiveness,
error_type_distribution and ai_correction_rates. `Collector` takes the rows while an export streams them, so
an export with a dataset card reads the labels once.
"""

import dataclasses

import pandas as pd

from corpus.models import Project

from .aggregation import summary_results
from .scores import (
    SCORE_DIMENSIONS,
    CorrectionRates,
    SourceNgrams,
    abstractiveness,
    ai_correction_rates,
    error_type_distribution,
    score_table,
)
from .selectors import label_source

CONTEXTS = ("input_type", "length", "domain")
# Documents per read of the labels. Each chunk's label queries cost about as much as reading every label of the
# project (PostgreSQL walks the labels by annotator, then keeps the chunk's), so the export's 25 made the analytics
# quadratic: 19.6 s of queries at 1x against 6.3 s in one chunk (measured 2026-11-24). 500 documents hold ~380,000
# labels at UniSumEval's density, ~100 MB while they are grouped.
ANALYTICS_CHUNK = 500


@dataclasses.dataclass
class Analytics:
    label_source: str
    summaries: pd.DataFrame  # one row per summary: keys, the four scores, abstractiveness
    error_types: dict[str, dict]  # "model" and each context -> group -> type -> share
    error_sentences: int
    corrections_majority: CorrectionRates
    corrections_judgments: CorrectionRates
    # (uid, model, sentence index) -> the fact-verification majority (1 = error, None = not decided yet); what
    # sentence-level evaluator benchmarks compare with.
    sentence_labels: dict = dataclasses.field(default_factory=dict)

    @property
    def has_scores(self) -> bool:
        return not self.summaries.empty and self.summaries[list(SCORE_DIMENSIONS)].notna().any().any()

    def table(self):
        """exports.scores.ScoreTable in percent, or None before any score exists."""
        return score_table(self.summaries.to_dict("records")) if self.has_scores else None

    def summarizer_table(self) -> pd.DataFrame:
        """Per summarizer: mean scores over domains (%), domain stability of the composite, abstractiveness (%)."""
        table = self.table()
        if table is None:
            return pd.DataFrame()
        frame = table.overall.copy()
        frame["domain_stability"] = table.domain_stability["composite"]
        frame["abstractiveness"] = self.summaries.groupby("model")["abstractiveness"].mean() * 100
        return frame.round(1)


class Collector:
    """Feed it summary_results rows (`add`), then `finish()`; keeps a few numbers per summary and sentence."""

    def __init__(self, source: str):
        self.source = source
        self.records: list[dict] = []
        self.errors: list[dict] = []
        self.majority_pairs: list[tuple] = []
        self.judgment_pairs: list[tuple] = []
        self.sentence_labels: dict[tuple, int | None] = {}
        self._source: tuple[str, SourceNgrams] | None = None  # rows come grouped by document

    def add(self, row: dict) -> None:
        text, document = row.get("summary"), row.get("document")
        for index, label in enumerate(row["fact_verification_label"]):
            self.sentence_labels[row["uid"], row["model"], index] = label
        self.records.append({
            "uid": row["uid"], "model": row["model"], "domain": row["domain"], "source": row["source"],
            "length": row["length"],
            "input_type": row["input_type"], "faithfulness": row["faithfulness_score"],
            "completeness": row["completeness"], "conciseness": row["conciseness"], "composite": row["composite"],
            "abstractiveness": abstractiveness(text, self._ngrams(document)) if text and document else None,
        })
        for label, types, ai, votes in zip(row["fact_verification_label"], row["fact_verification_error_type"],
                                           row["_ai"], row["_fv_votes"]):
            if label:
                self.errors.append({"model": row["model"], "error_types": types,
                                    **{context: row[context] for context in CONTEXTS}})
            if ai:
                ai_error = ai != "no_error"
                self.majority_pairs.append((ai_error, None if label is None else bool(label)))
                self.judgment_pairs.extend((ai_error, bool(vote)) for vote in votes)

    def _ngrams(self, document: str) -> SourceNgrams:
        if self._source is None or self._source[0] != document:
            self._source = (document, SourceNgrams(document))
        return self._source[1]

    def finish(self) -> Analytics:
        summaries = pd.DataFrame.from_records(self.records, columns=[
            "uid", "model", "domain", "source", "length", "input_type", *SCORE_DIMENSIONS, "composite",
            "abstractiveness"])
        for column in (*SCORE_DIMENSIONS, "composite", "abstractiveness"):
            summaries[column] = pd.to_numeric(summaries[column], errors="coerce").astype(float)
        return Analytics(
            label_source=self.source, summaries=summaries,
            error_types={group: error_type_distribution(self.errors, group_by=group)
                         for group in ("model", *CONTEXTS)},
            error_sentences=len(self.errors),
            corrections_majority=ai_correction_rates(self.majority_pairs),
            corrections_judgments=ai_correction_rates(self.judgment_pairs),
            sentence_labels=self.sentence_labels,
        )


def project_analytics(project: Project, *, include_simulated: bool = False, source: str | None = None) -> Analytics:
    collector = Collector(source or label_source(project, include_simulated=include_simulated))
    for row in summary_results(project, collector.source, chunk=ANALYTICS_CHUNK):
        collector.add(row)
    return collector.finish()
