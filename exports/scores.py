"""Summary scores from majority labels (UniSumEval paper, appendix D.1; FineSurE, eq. 1-2).

Per-summary scores are fractions in [0, 1], as equations (1)-(2) define them; the tables that compare
summarizers (`score_table`, `domain_stability`) are in percent, as the paper reports them (tables 4,
14-17). `None` means "undefined", never 0: a summary must not be rewarded or punished for a missing label, and a
composite is the mean of all three scores or None, never a mean of fewer.
"""

import dataclasses
import functools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence

import pandas as pd

# What a tie between annotators means, per task. A tie needs an even number of valid votes, which the
# protocol's 3 annotators only produce when a rating is missing. The rule throughout: a tie never gives
# a summary credit it has not earned from a majority.
# - fv (label: "the sentence has a factual error"): a tie is an error. A sentence half of its
#   annotators reject is not verified as faithful (paper 3.3).
# - kv (label: "the key-fact is useful"): a tie is "not useful". Only a key-fact that the majority
#   accepts becomes a human key-fact (paper 3.5, B.3).
# - ka (label: "the key-fact can be inferred from the sentence"): a tie is "not aligned", so neither
#   completeness nor conciseness is credited on a split vote.
TIE_BREAK: dict[str, bool] = {"fv": True, "kv": False, "ka": False}

SCORE_DIMENSIONS = ("faithfulness", "completeness", "conciseness")

_WORD = re.compile(r"\w+")


def majority_vote(labels: Iterable[bool | None], *, on_tie: bool | None) -> bool | None:
    """The majority of the valid (non-None) binary labels of one unit.

    `on_tie` is what an even split returns: pass the task's rule, `TIE_BREAK["fv"]` and so on, or None
    to leave the unit undecided. No valid label at all also gives None.
    """
    yes = no = 0  # Counted by hand: a Counter per unit cost more than the rest of the vote (66,000 units an export).
    for label in labels:
        if label is None:
            continue
        if label:
            yes += 1
        else:
            no += 1
    if yes == no:
        return None if not yes else on_tie
    return yes > no


def faithfulness(sentence_error_flags: Sequence[bool | None]) -> float | None:
    """|S_fact| / |S|: the share of sentences without a factual error (paper eq. 1).

    `sentence_error_flags[i]` is the majority "has an error" label of sentence i (the export's
    fact_verification_label, 1 = error). None if the summary has no sentence or a sentence has no label.
    """
    return _share(sentence_error_flags, negate=True)


def completeness(keyfact_aligned_flags: Sequence[bool | None]) -> float | None:
    """Share of the human key-facts aligned with at least one summary sentence (paper eq. 2).

    None when the document has no human key-fact (0/0), or a flag is missing.
    """
    return _share(keyfact_aligned_flags)


def conciseness(sentence_aligned_flags: Sequence[bool | None]) -> float | None:
    """Share of the summary sentences aligned with at least one key-fact (paper eq. 2).

    None when the summary has no sentence, or a flag is missing. Callers should also pass None, not
    all-False flags, when the document has no human key-fact: see `key_fact_alignment_scores`.
    """
    return _share(sentence_aligned_flags)


def composite(
    faithfulness: float | None, completeness: float | None, conciseness: float | None
) -> float | None:
    """The mean of the three scores (paper 5: "the average of the three percentage scores"); None when
    any of them is None.

    A document without human key-facts has no completeness or conciseness, so its summaries have no
    composite: faithfulness alone would be another measure under the same name, and would rank such
    summaries against others on one dimension instead of three. They keep their faithfulness score.
    """
    scores = (faithfulness, completeness, conciseness)
    return None if any(score is None for score in scores) else sum(scores) / len(scores)


@dataclasses.dataclass(frozen=True)
class KeyFactAlignment:
    """Completeness and conciseness of one summary with the per-item labels of the export format."""

    completeness: float | None
    conciseness: float | None
    keyfact_label: list[int]
    sentence_label: list[int]


def key_fact_alignment_scores(
    matrix: Sequence[Sequence[bool]], n_sentences: int | None = None
) -> KeyFactAlignment:
    """Scores of one summary from its key-fact alignment majority matrix (key-facts x sentences).

    The matrix is the bipartite graph of paper eq. 2: key-fact k aligns with a sentence when
    matrix[k][s] is true. keyfact_label[k] = 1 when key-fact k aligns with some sentence;
    sentence_label[s] = 1 when sentence s aligns with some key-fact. `n_sentences` is needed only when
    the document has no human key-fact (the matrix has no row); both scores are then None, because a
    summary cannot be judged against key-facts that do not exist.
    """
    width = len(matrix[0]) if len(matrix) else (n_sentences or 0)
    if n_sentences is not None and n_sentences != width:
        raise ValueError(f"The matrix has {width} columns for {n_sentences} sentences.")
    if any(len(row) != width for row in matrix):
        raise ValueError("Every key-fact row must have one cell per summary sentence.")
    keyfact_label = [int(any(row)) for row in matrix]
    sentence_label = [int(any(row[s] for row in matrix)) for s in range(width)]
    if not len(matrix):
        return KeyFactAlignment(None, None, [], sentence_label)
    return KeyFactAlignment(
        completeness=completeness(keyfact_label),
        conciseness=conciseness(sentence_label),
        keyfact_label=keyfact_label,
        sentence_label=sentence_label,
    )


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens: maximal runs of Unicode letters, digits and underscores.

    Punctuation and whitespace separate tokens and are dropped, so "U.S." gives "u", "s" and "don't"
    gives "don", "t"; summary and source go through the same rule, so copies are still found.
    """
    return _WORD.findall(text.lower())


def novel_ngram_ratio(summary_tokens: Sequence[str], source_tokens: Sequence[str], n: int) -> float | None:
    """N_n = 1 - |copied n-grams| / |summary n-grams| over sets of n-grams (paper eq. 5).

    None when the summary is shorter than n tokens.
    """
    summary_ngrams = _ngrams(summary_tokens, n)
    if not summary_ngrams:
        return None
    return 1 - len(summary_ngrams & _ngrams(source_tokens, n)) / len(summary_ngrams)


ABSTRACTIVENESS_ORDERS = (1, 3, 5)


class SourceNgrams:
    """The 1-, 3- and 5-gram sets of one source text: a long document's sets cost far more than a summary's, and
    each document has several summaries."""

    def __init__(self, source: str):
        self.ngrams = _source_ngrams(source)


@functools.lru_cache(maxsize=4)
def _source_ngrams(source: str) -> tuple[set[tuple[str, ...]], ...]:
    """The 1-, 3- and 5-gram sets of a source, made once per document: its summaries (9 per document in
    UniSumEval) arrive one after the other, and these sets are most of abstractiveness' cost."""
    tokens = tokenize(source)
    return tuple(_ngrams(tokens, n) for n in ABSTRACTIVENESS_ORDERS)


def abstractiveness(summary: str, source: str | SourceNgrams) -> float | None:
    """Mean of the novel 1-, 3- and 5-gram ratios of the summary against its source (paper eq. 6).

    Song et al. (2023), via the paper's appendix D.1. For a summary shorter than 5 tokens the mean runs
    over the orders that exist; None for a summary with no token. Tokens: see `tokenize`. `source` may be the
    source's n-grams (`SourceNgrams`), made once for the several summaries of one document.
    """
    summary_tokens = tokenize(summary)
    ratios = []
    source_sets = source.ngrams if isinstance(source, SourceNgrams) else _source_ngrams(source)
    for n, source_ngrams in zip(ABSTRACTIVENESS_ORDERS, source_sets):
        summary_ngrams = _ngrams(summary_tokens, n)
        ratios.append(1 - len(summary_ngrams & source_ngrams) / len(summary_ngrams) if summary_ngrams else None)
    defined = [ratio for ratio in ratios if ratio is not None]
    return sum(defined) / len(defined) if defined else None


def domain_stability(domain_means: Mapping[Hashable, float | None] | Iterable[float | None]) -> float:
    """DoS = 100 - (max - min) of a summarizer's per-domain mean scores, in percent (paper eq. 3-4).

    Domains without a score (None or NaN) are left out; ValueError if none has one.
    """
    values = domain_means.values() if isinstance(domain_means, Mapping) else domain_means
    scores = [float(value) for value in values if value is not None and not math.isnan(value)]
    if not scores:
        raise ValueError("Domain stability needs at least one domain with a score.")
    return 100 - (max(scores) - min(scores))


@dataclasses.dataclass(frozen=True)
class ScoreTable:
    """Summarizer x domain tables in percent, as the paper's tables 14-17.

    `by_domain[dimension]`: mean score per summarizer (rows) and domain (columns), for each of
    faithfulness, completeness, conciseness and composite. `overall`: per summarizer, the mean over
    domains of those cells (tables 14-17, "Avg. Score": every domain weighs the same).
    `domain_stability`: per summarizer and dimension (tables 14-17, "DoS").
    """

    by_domain: dict[str, pd.DataFrame]
    overall: pd.DataFrame
    domain_stability: pd.DataFrame

    def domain_average(self, dimension: str) -> pd.Series:
        """Per domain, the mean over summarizers of their cells (tables 14-17, "Avg. Score in Domain"); a
        summarizer without a score in a domain is left out of that domain's mean."""
        return self.by_domain[dimension].mean(axis=0)


def score_table(rows: Iterable[Mapping]) -> ScoreTable:
    """Tables per summarizer and domain from per-summary rows.

    Each row has `model`, `domain` and the three scores as fractions (None when undefined; such
    summaries are left out of that dimension's means only). The composite of a cell is the mean of
    the cell's three dimension means, which is how table 17 follows from tables 14-16; a cell with no
    completeness or conciseness (no document of it has human key-facts) has no composite (NaN), never
    faithfulness alone. The overall means and domain stability leave such cells out.
    """
    frame = pd.DataFrame.from_records(
        [{key: row.get(key) for key in ("model", "domain", *SCORE_DIMENSIONS)} for row in rows],
        columns=["model", "domain", *SCORE_DIMENSIONS],
    )
    if frame.empty:
        raise ValueError("A score table needs at least one summary.")
    scores = frame[list(SCORE_DIMENSIONS)].apply(pd.to_numeric, errors="coerce").astype(float) * 100
    cells = pd.concat([frame[["model", "domain"]], scores], axis=1).groupby(["model", "domain"]).mean()
    cells["composite"] = cells[list(SCORE_DIMENSIONS)].mean(axis=1, skipna=False)
    by_domain = {dimension: cells[dimension].unstack("domain") for dimension in cells.columns}
    overall = pd.DataFrame({dimension: table.mean(axis=1) for dimension, table in by_domain.items()})
    stability = pd.DataFrame(
        {dimension: table.apply(_stability_or_nan, axis=1) for dimension, table in by_domain.items()}
    )
    return ScoreTable(by_domain=by_domain, overall=overall, domain_stability=stability)


@dataclasses.dataclass(frozen=True)
class ContextTable:
    """Scores by input type and length in percent, as the paper's table 4.

    `cells`: per summarizer (rows), the mean score of its summaries in each (input type, length, dimension)
    (columns). `model_average`: per summarizer and dimension, the mean of its context cells ("Avg. Score
    (Model-wise)": each context weighs the same, as 84.1 = (87.6 + 89.5 + 81.5 + 77.9) / 4 for BART's
    faithfulness shows). `context_average`: per column, the mean over summarizers ("Avg. Score (Context-wise)");
    `overall`: per dimension, the mean of the summarizers' model-wise averages (the table's last corner).
    """

    cells: pd.DataFrame
    model_average: pd.DataFrame
    context_average: pd.Series
    overall: pd.Series


def context_table(rows: Iterable[Mapping]) -> ContextTable:
    """Table 4 from per-summary rows with `model`, `input_type`, `length` and the three scores as fractions.

    Every cell is a mean over summaries, so a context whose domains have unequal numbers of documents weighs
    each document the same; a summary whose score is undefined is left out of that dimension only. A context no
    summary of a summarizer falls in is NaN and left out of its model-wise average.
    """
    keys = ("model", "input_type", "length", *SCORE_DIMENSIONS)
    frame = pd.DataFrame.from_records([{key: row.get(key) for key in keys} for row in rows], columns=list(keys))
    if frame.empty:
        raise ValueError("A context table needs at least one summary.")
    scores = frame[list(SCORE_DIMENSIONS)].apply(pd.to_numeric, errors="coerce").astype(float) * 100
    means = pd.concat([frame[["model", "input_type", "length"]], scores], axis=1).groupby(
        ["model", "input_type", "length"]).mean()
    cells = means.unstack(["input_type", "length"])  # columns: (dimension, input type, length)
    cells.columns = cells.columns.reorder_levels([1, 2, 0])
    cells = cells.sort_index(axis=1)
    model_average = pd.DataFrame({dimension: cells.xs(dimension, axis=1, level=2).mean(axis=1)
                                  for dimension in SCORE_DIMENSIONS})
    return ContextTable(cells=cells, model_average=model_average, context_average=cells.mean(axis=0),
                        overall=model_average.mean(axis=0))


def summary_has_error(sentence_error_flags: Sequence[bool | None]) -> bool | None:
    """Whether the majority found a factual error in some sentence of a summary: True as soon as one sentence has
    one, False when every sentence is decided and none has, None while that is not known yet."""
    if any(flag for flag in sentence_error_flags):
        return True
    if sentence_error_flags and all(flag is not None for flag in sentence_error_flags):
        return False
    return None


@dataclasses.dataclass(frozen=True)
class SourceShare:
    """Source texts for which at least one summarizer hallucinates (paper 4.1: 93.3% of the selected texts)."""

    hallucinated: int  # some summary of the text has a sentence with a factual error
    decided: int  # hallucinated, or every summary's every sentence decided without an error
    undecided: int  # neither yet: left out of the share

    @property
    def share(self) -> float | None:
        return self.hallucinated / self.decided if self.decided else None


def hallucinated_sources(summaries: Mapping[Hashable, Iterable[bool | None]]) -> SourceShare:
    """`summaries[text]`: the `summary_has_error` of each summary of one source text."""
    hallucinated = decided = undecided = 0
    for flags in summaries.values():
        flags = list(flags)
        if any(flag for flag in flags):
            hallucinated += 1
            decided += 1
        elif flags and all(flag is False for flag in flags):
            decided += 1
        else:
            undecided += 1
    return SourceShare(hallucinated, decided, undecided)


def error_type_distribution(
    rows: Iterable[Mapping], group_by: str = "model"
) -> dict[Hashable, dict[str, float]]:
    """Share of each factual error type per group (paper 5.4, figure 4).

    Each row is one sentence judged erroneous, with its group (`row[group_by]`: a summarizer, a model
    type, an input context) and `error_types`, the types kept for it. A sentence may carry several
    types (the fact verification form is a multi-select), so shares are over type mentions and sum to
    1 in each group. Every type seen anywhere is listed in every group (0.0 when absent), so groups
    line up in a plot; a group without any mention maps to {}.
    """
    counts: dict[Hashable, Counter] = defaultdict(Counter)
    for row in rows:
        counts[row[group_by]].update(row["error_types"])
    types = sorted(set().union(*counts.values())) if counts else []
    distribution = {}
    for group, counter in counts.items():
        total = sum(counter.values())
        distribution[group] = {name: counter[name] / total for name in types} if total else {}
    return distribution


@dataclasses.dataclass(frozen=True)
class CorrectionRates:
    """How often annotators overruled the AI pre-label (paper 4.1 and table 12)."""

    ai_error: int
    ai_error_corrected: int
    ai_no_error: int
    ai_no_error_corrected: int

    @property
    def ai_error_correction_rate(self) -> float | None:
        """AI said "error", annotators said "no error": share of the AI's error flags."""
        return self.ai_error_corrected / self.ai_error if self.ai_error else None

    @property
    def ai_no_error_correction_rate(self) -> float | None:
        """AI said "no error", annotators found one: share of the AI's clean verdicts."""
        return self.ai_no_error_corrected / self.ai_no_error if self.ai_no_error else None


def ai_correction_rates(pairs: Iterable[tuple[bool | None, bool | None]]) -> CorrectionRates:
    """Count (AI says error, human says error) pairs; a pair with a missing side is skipped.

    Pass one pair per annotator judgment to reproduce table 12 (its 2,061 + 22,338 = 24,399 pairs are
    3 x 8,133 sentences), or one per sentence with the majority label.
    """
    ai_error = ai_error_corrected = ai_no_error = ai_no_error_corrected = 0
    for ai_says_error, human_says_error in pairs:
        if ai_says_error is None or human_says_error is None:
            continue
        if ai_says_error:
            ai_error += 1
            ai_error_corrected += not human_says_error
        else:
            ai_no_error += 1
            ai_no_error_corrected += bool(human_says_error)
    return CorrectionRates(ai_error, ai_error_corrected, ai_no_error, ai_no_error_corrected)


def _share(flags: Sequence[bool | None], negate: bool = False) -> float | None:
    if not flags or any(flag is None for flag in flags):
        return None
    hits = sum(1 for flag in flags if bool(flag) != negate)
    return hits / len(flags)


def _ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    # zip of n shifted views: the same tuples as slicing at every position, without a slice per n-gram.
    return set(zip(*(tokens[i:] for i in range(n))))


def _stability_or_nan(means: pd.Series) -> float:
    return domain_stability(means) if means.notna().any() else math.nan
