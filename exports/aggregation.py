"""Majority labels and scores per summary (paper section 4, appendix D.1), read in document chunks.

`summary_results` yields one dict per summary with the UniSumEval release fields, computed from the counted
labels (exports.selectors) by exports.scores.majority_vote with the TIE_BREAK rules:
- fv: a tie is an error; kv: a tie is "not useful"; ka: a tie is "not aligned".
A sentence, key-fact or pair that no counted label covers yet gets None, and the scores it feeds are None
(never 0): a summary is not judged on labels that do not exist.

Error types of a sentence whose majority label is "error": the types named by at least half of the
annotators who marked it erroneous (the form is a multi-select, paper 3.3); when that keeps none, every
type named. Memory is bounded by the chunk: every query is restricted to `chunk` documents, but the votes, which
come from one query over the whole project read in chunks as the rows are written (the database sorts them).
"""

import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import UTC

from django.db import connection
from django.db.models import Case, Exists, F, IntegerField, JSONField, OuterRef, Q, TextField, Value, When, Window
from django.db.models.functions import Cast, RowNumber
from django.utils.crypto import salted_hmac

from annotation.models import (
    Adjudication,
    Annotator,
    Assignment,
    AttentionCheck,
    ItemFlag,
    Label,
    Task,
    Unit,
    UnitState,
)
from annotation.redundancy import Verdict
from corpus.models import Document, KeyFact, Project, RedundancyPolicy, Summary, SummarySentence

from .models import ReleaseLabels
from .scores import (
    TIE_BREAK,
    completeness,
    composite,
    conciseness,
    faithfulness,
    key_fact_alignment_scores,
    majority_vote,
)
from .second_opinion import TaskOpinion
from .selectors import PAIR, RELEASE, TASK_FIELD, analysis_labels, stream, stream_sql

RELEASE_FIELDS = (
    "uid", "doc_id", "source", "domain", "length", "input_type", "redact_type", "model", "reference", "document",
    "summary", "sentences", "fact_verification_label", "fact_verification_error_type", "faithfulness_score",
    "pred_keyfact", "keyfact_validation_label", "keyfact", "keyfact_label", "completeness", "sentence_label",
    "conciseness",
)
# Beyond the release: Dawid-Skene's label (1 = error / useful / aligned) and the posterior probability of that
# positive answer, next to the majority label of each sentence, candidate key-fact and (human key-fact, sentence)
# pair (exports.second_opinion). The release has no per-pair majority (only keyfact_label and sentence_label,
# derived from it), so `keyfact_alignment_label` gives it: rows are the human key-facts, columns the sentences.
DAWID_SKENE_FIELDS = (
    "fact_verification_label_dawid_skene", "fact_verification_posterior_dawid_skene",
    "keyfact_validation_label_dawid_skene", "keyfact_validation_posterior_dawid_skene",
    "keyfact_alignment_label", "keyfact_alignment_label_dawid_skene", "keyfact_alignment_posterior_dawid_skene",
)
# How each item was collected under the project's redundancy policy (annotation.redundancy): the policy with its
# parameters, and per item its counted labels and the round whose label settled it (0: its first HIT; None: not
# settled yet, or labelled before its state was kept).
REDUNDANCY_FIELDS = (
    "redundancy", "fact_verification_label_count", "fact_verification_settled_round",
    "keyfact_validation_label_count", "keyfact_validation_settled_round",
    "keyfact_alignment_label_count", "keyfact_alignment_settled_round",
)
DOCUMENT_CHUNK = 25


def _int(flag: bool | None) -> int | None:
    return None if flag is None else int(flag)


def sentence_error_types(votes: list[tuple[bool, list]]) -> list[str]:
    """Types kept for a sentence judged erroneous; `votes` are (has_error, error_types) per annotator."""
    flagged = [types for has_error, types in votes if has_error]
    counts = Counter(name for types in flagged for name in set(types))
    kept = sorted(name for name, count in counts.items() if 2 * count >= len(flagged))
    return kept or sorted(counts)


def pseudonyms(project: Project) -> dict[int, str]:
    """annotator id -> the pseudonym exports use (Annotator.pseudonym: from public_id, stable, not the worker id)."""
    ids = Label.objects.filter(unit__hit__project=project).values("annotator_id")
    return {annotator.pk: annotator.pseudonym for annotator in Annotator.objects.filter(pk__in=ids)}


def summary_results(project: Project, source: str, *, chunk: int | None = None, annotator_labels: bool = False,
                    assistance: bool = False, with_text: bool = True, with_ai: bool = True,
                    opinions: dict[str, TaskOpinion] | None = None) -> Iterator[dict]:
    """One dict per summary (RELEASE_FIELDS, plus `annotator_labels`/`assistance` on request, plus private
    `_`-prefixed fields for the analytics: `_ai` per sentence and `_fv_votes`). Without `with_ai`, `_ai` is all
    None: the AI judgments shown are not read (unless `assistance` asks for them). With `opinions` (Dawid-Skene
    per task, exports.second_opinion, computed once over all the labels of each task before the rows), also
    DAWID_SKENE_FIELDS, looked up a chunk at a time; a release's rows (no annotator labels) have none."""
    chunk = chunk or DOCUMENT_CHUNK
    if source == RELEASE:
        yield from release_results(project, chunk=chunk, with_text=with_text)
        return
    names = pseudonyms(project) if annotator_labels else {}
    document_ids = list(Document.objects.filter(project=project).order_by("domain", "uid").values_list("pk", flat=True))
    votes = _Votes(project, source, document_ids, fetch=VOTES_PER_FETCH_AND_DOCUMENT * chunk)
    for start in range(0, len(document_ids), chunk):
        ids = document_ids[start:start + chunk]
        yield from _chunk_results(project, ids, votes.take(ids), names, annotator_labels, assistance, with_text,
                                  with_ai, opinions)


# Votes fetched at a time, per document of a chunk: about a third of a chunk's votes at UniSumEval's ~300 votes per
# document, so that memory stays bounded by the chunk.
VOTES_PER_FETCH_AND_DOCUMENT = 100


class _Votes:
    """Every counted vote of the project from one query, in the order the rows are written (documents by domain and
    uid, then annotator), read as the document chunks come: a query per chunk would scan all the labels each time
    (the database starts from the submitted assignments), so the work would grow with chunks x labels."""

    def __init__(self, project: Project, source: str, document_ids: list[int], fetch: int):
        self.position = {pk: i for i, pk in enumerate(document_ids)}
        # Plain integers and text: the answer of the unit's task as 0/1 and the error types as JSON
        # text, decoded only for FV labels that name some.
        answer = Case(*(When(unit__task=task, then=Cast(field, IntegerField())) for task, field in TASK_FIELD.items()))
        votes = (analysis_labels(project, source)
                 .filter(Q(unit__task=Task.FACT_VERIFICATION, has_error__isnull=False)
                         | Q(unit__task=Task.KEYFACT_VALIDATION, useful__isnull=False)
                         | Q(unit__task=Task.KEYFACT_ALIGNMENT, aligned__isnull=False)))
        if connection.vendor == "postgresql":
            self.rows = _votes_by_place(project, votes, answer, fetch)
        else:
            self.rows = stream(votes.order_by("unit__hit__document__domain", "unit__hit__document__uid",
                                              "unit__hit__document_id", "annotator_id", "pk")
                               .values_list("unit__hit__document_id", "unit__task", "unit__summary_sentence_id",
                                            "unit__keyfact_id", "annotator_id", answer,
                                            Cast("error_types", TextField())), fetch)
        self.next = next(self.rows, None)  # Read ahead: the first vote not taken yet.
        # Error types JSON -> list, decoded once per distinct text (a few combinations of the error types); the
        # lists are shared between votes and only ever read.
        self.decoded: dict[str | None, list] = {}

    def take(self, ids: list[int]) -> tuple[dict, dict, dict]:
        """fv: sentence -> [(annotator, has_error, types)], kv: key-fact -> [(annotator, useful)],
        ka: (key-fact, sentence) -> [(annotator, aligned)] of the documents `ids` (the next chunk), annotators in
        id order."""
        fv, kv, ka = defaultdict(list), defaultdict(list), defaultdict(list)
        position, last, decoded = self.position, self.position[ids[-1]], self.decoded
        rows = itertools.chain([self.next], self.rows) if self.next is not None else ()
        self.next = None
        document = place = None
        for row in rows:
            if row[0] != document:  # A document's votes come together: its place is looked up once.
                document = row[0]
                place = position.get(document)
                if place is not None and place > last:
                    self.next = row  # The first vote of the next chunk.
                    break
            if place is None:
                continue
            _, task, sentence_id, keyfact_id, annotator_id, answer, types = row
            if task == FV:
                if types not in decoded:
                    decoded[types] = _types(types)
                fv[sentence_id].append((annotator_id, bool(answer), decoded[types]))
            elif task == KV:
                kv[keyfact_id].append((annotator_id, bool(answer)))
            else:
                ka[keyfact_id, sentence_id].append((annotator_id, bool(answer)))
        return fv, kv, ka


def _votes_by_place(project: Project, votes, answer, fetch: int):
    """The votes in the same order, sorted by their document's place in the (domain, uid) order: PostgreSQL compares
    texts through the collation, without abbreviated keys, so sorting 69,000 votes by their document's texts was
    ~40% of the query at UniSumEval scale; the 225 documents are ranked once and the votes sorted by integers.
    (SQLite ran this join several times slower than its own sort by the texts, so it keeps the ORDER BY.)"""
    votes = votes.order_by().values(
        vote_document=F("unit__hit__document_id"), vote_task=F("unit__task"),
        vote_sentence=F("unit__summary_sentence_id"), vote_keyfact=F("unit__keyfact_id"),
        vote_annotator=F("annotator_id"), vote_answer=answer, vote_types=Cast("error_types", TextField()),
        vote_label=F("pk"))
    places = (Document.objects.filter(project=project).order_by()
              .values(place_document=F("pk"),
                      place=Window(RowNumber(), order_by=(F("domain").asc(), F("uid").asc(), F("pk").asc()))))
    votes_sql, votes_params = votes.query.sql_with_params()
    places_sql, places_params = places.query.sql_with_params()
    return stream_sql(
        "SELECT v.vote_document, v.vote_task, v.vote_sentence, v.vote_keyfact, v.vote_annotator, v.vote_answer, "
        f"v.vote_types FROM ({votes_sql}) v INNER JOIN ({places_sql}) p ON p.place_document = v.vote_document "
        "ORDER BY p.place, v.vote_annotator, v.vote_label", (*votes_params, *places_params), fetch)


# Plain strings: compared once per vote.
FV, KV, KA = str(Task.FACT_VERIFICATION), str(Task.KEYFACT_VALIDATION), str(Task.KEYFACT_ALIGNMENT)


def _types(text: str | None) -> list:
    """A label's error types from their JSON text; none (NULL, JSON null, []) is []."""
    return (json.loads(text) or []) if text and text != "[]" else []


def reviewer_pseudonym(user_id: int | None) -> str | None:
    """A reviewer as exports name them: never the account's username or id (annotators are named by
    Annotator.pseudonym the same way), but the same name in every export of this deployment, keyed by its secret,
    so that a reader can tell one reviewer's adjudications from another's. None for a deleted account."""
    if user_id is None:
        return None
    return "rev-" + salted_hmac("finegrain.exports.reviewer", str(user_id)).hexdigest()[:10]


def _when(moment) -> str:
    """A time as the export writes it: UTC, ISO 8601, to the second."""
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def _chunk_results(project, ids, votes, names, annotator_labels, assistance, with_text, with_ai,
                   opinions) -> Iterator[dict]:
    fields = ["pk", "uid", "doc_id", "source", "domain", "length", "input_type", "redact_type", "reference"]
    documents = {row["pk"]: row for row in Document.objects.filter(pk__in=ids).values(*fields, *(
        ["text"] if with_text else []))}
    summaries = list(Summary.objects.filter(document_id__in=ids).order_by("document__domain", "document__uid", "model")
                     .values("pk", "document_id", "model", *(["text"] if with_text else [])))
    sentences = defaultdict(list)
    for pk, summary_id, text in (SummarySentence.objects.filter(summary__document_id__in=ids)
                                 .order_by("summary_id", "index").values_list("pk", "summary_id", "text")):
        sentences[summary_id].append((pk, text))
    candidates, human = defaultdict(list), defaultdict(list)
    for pk, document_id, text, origin, status in (KeyFact.objects.filter(document_id__in=ids).order_by(
            "document_id", "index").values_list("pk", "document_id", "text", "origin", "status")):
        if origin != KeyFact.Origin.HUMAN:
            candidates[document_id].append((pk, text))
        if status == KeyFact.Status.ACCEPTED:
            human[document_id].append((pk, text))

    fv, kv, ka = votes

    # Reviewers' adjudicated labels, kept apart from the annotators' (used for the scores where the project says so).
    settled, settled_by = {}, {}
    for task, sentence_id, keyfact_id, has_error, types, useful, aligned, reason, reviewer, when in (
            Adjudication.objects.filter(unit__hit__document_id__in=ids).values_list(
                "unit__task", "unit__summary_sentence_id", "unit__keyfact_id", "has_error", "error_types", "useful",
                "aligned", "reason", "reviewer_id", "updated_at")):
        key = {"fv": ("fv", sentence_id), "kv": ("kv", keyfact_id), "ka": ("ka", keyfact_id, sentence_id)}[task]
        settled[key] = {"fv": has_error, "kv": useful, "ka": aligned}[task], types or [], reason
        # Who settled it and when (the last time: settling again replaces the answer).
        settled_by[key] = {"reviewer": reviewer_pseudonym(reviewer), "adjudicated_at": _when(when)}
    use_settled = project.adjudication_in_aggregation

    def decided(key, majority):
        return settled[key][0] if use_settled and key in settled else majority

    # Annotators' flags on real units (broken or unclear items), from submissions that stand (not discarded).
    flags = defaultdict(list)
    if annotator_labels:
        for task, sentence_id, keyfact_id, annotator_id, comment, when in (
                ItemFlag.objects.filter(unit__hit__document_id__in=ids, unit__attention_check__isnull=True,
                                        assignment__status=Assignment.Status.SUBMITTED)
                .order_by("assignment__annotator_id", "pk")
                .values_list("unit__task", "unit__summary_sentence_id", "unit__keyfact_id", "assignment__annotator_id",
                             "comment", "created")):
            key = {"fv": ("fv", sentence_id), "kv": ("kv", keyfact_id), "ka": ("ka", keyfact_id, sentence_id)}[task]
            flags[key].append((annotator_id, comment, _when(when)))

    # The AI judgment shown on each sentence's (non-check) FV unit, and highlights per target.
    shown = {}
    # "Not a check" as NOT EXISTS: an anti-join PostgreSQL estimates (see annotation.quality.selectors.counted_labels).
    units = Unit.objects.filter(~Exists(AttentionCheck.objects.filter(unit_id=OuterRef("pk"))),
                                hit__document_id__in=ids)
    if not assistance:  # Only the AI's category on FV units (`_ai`): not the highlights of every unit.
        units = units.filter(task=Task.FACT_VERIFICATION)
    if not (with_ai or assistance):
        units = units.none()
    for task, sentence_id, keyfact_id, category, reason, highlighted in units.values_list(
            "task", "summary_sentence_id", "keyfact_id", "ai_category", "ai_reason",
            "highlighted" if assistance else Value(None, JSONField())):
        if task == Task.FACT_VERIFICATION:
            shown["fv", sentence_id] = {"ai_category": category or None, "ai_reason": reason or None,
                                        "highlighted": highlighted}
        elif task == Task.KEYFACT_VALIDATION:
            shown["kv", keyfact_id] = {"highlighted": highlighted}
        elif task == Task.KEYFACT_ALIGNMENT:
            shown["ka", keyfact_id] = {"highlighted": highlighted}

    if opinions is not None:
        fv_ds, kv_ds, ka_ds = _chunk_opinions(opinions, summaries, sentences, candidates, human)

    rounds = {}
    for task, sentence_id, keyfact_id, settled_round in (
            UnitState.objects.filter(unit__hit__document_id__in=ids, verdict=Verdict.SETTLED)
            .values_list("task", "unit__summary_sentence_id", "unit__keyfact_id", "settled_round")):
        key = {"fv": ("fv", sentence_id), "kv": ("kv", keyfact_id), "ka": ("ka", keyfact_id, sentence_id)}[task]
        rounds[key] = settled_round
    policy = {"policy": project.redundancy_policy, "annotators": project.annotators_per_unit,
              **({"margin": project.lead_margin, "cap": project.lead_cap}
                 if project.redundancy_policy == RedundancyPolicy.LEAD else {})}

    for summary in summaries:
        document = documents[summary["document_id"]]
        doc_id = summary["document_id"]
        sents = sentences[summary["pk"]]
        fv_votes = [fv.get(pk, []) for pk, _ in sents]
        fv_labels = [decided(("fv", pk), majority_vote([v[1] for v in votes], on_tie=TIE_BREAK["fv"]))
                     for (pk, _), votes in zip(sents, fv_votes)]
        error_types = [(settled[("fv", pk)][1] if use_settled and ("fv", pk) in settled else
                        sentence_error_types([(v[1], v[2]) for v in votes])) if flag else []
                       for (pk, _), flag, votes in zip(sents, fv_labels, fv_votes)]
        kv_labels = [decided(("kv", pk), majority_vote([v[1] for v in kv.get(pk, [])], on_tie=TIE_BREAK["kv"]))
                     for pk, _ in candidates[doc_id]]
        matrix = [[decided(("ka", fact, sent), majority_vote([v[1] for v in ka.get((fact, sent), [])],
                                                             on_tie=TIE_BREAK["ka"]))
                   for sent, _ in sents] for fact, _ in human[doc_id]]
        keyfact_label, sentence_label, complete, concise = _alignment(matrix, len(sents))
        faith = faithfulness(fv_labels)
        row = {
            "uid": document["uid"], "doc_id": document["doc_id"], "source": document["source"],
            "domain": document["domain"], "length": document["length"], "input_type": document["input_type"],
            "redact_type": document["redact_type"], "model": summary["model"], "reference": document["reference"],
            "document": document.get("text"), "summary": summary.get("text"),
            "sentences": [text for _, text in sents],
            "fact_verification_label": [_int(flag) for flag in fv_labels],
            "fact_verification_error_type": error_types,
            "faithfulness_score": faith,
            "pred_keyfact": [text for _, text in candidates[doc_id]],
            "keyfact_validation_label": [_int(flag) for flag in kv_labels],
            "keyfact": [text for _, text in human[doc_id]],
            "keyfact_label": keyfact_label, "completeness": complete,
            "sentence_label": sentence_label, "conciseness": concise,
            "composite": composite(faith, complete, concise),
            "_ai": [shown.get(("fv", pk), {}).get("ai_category") for pk, _ in sents],
            "_fv_votes": [[has_error for _, has_error, _ in votes] for votes in fv_votes],
            "redundancy": policy,
            "fact_verification_label_count": [len(votes) for votes in fv_votes],
            "fact_verification_settled_round": [rounds.get(("fv", pk)) for pk, _ in sents],
            "keyfact_validation_label_count": [len(kv.get(pk, [])) for pk, _ in candidates[doc_id]],
            "keyfact_validation_settled_round": [rounds.get(("kv", pk)) for pk, _ in candidates[doc_id]],
            "keyfact_alignment_label_count": [[len(ka.get((fact, sent), [])) for sent, _ in sents]
                                              for fact, _ in human[doc_id]],
            "keyfact_alignment_settled_round": [[rounds.get(("ka", fact, sent)) for sent, _ in sents]
                                                for fact, _ in human[doc_id]],
        }
        if opinions is not None:
            fv_pairs = [fv_ds.get(pk, NO_OPINION) for pk, _ in sents]
            kv_pairs = [kv_ds.get(pk, NO_OPINION) for pk, _ in candidates[doc_id]]
            ka_pairs = [[ka_ds.get(fact * PAIR + sent, NO_OPINION) for sent, _ in sents] for fact, _ in human[doc_id]]
            row.update({
                "fact_verification_label_dawid_skene": [label for label, _ in fv_pairs],
                "fact_verification_posterior_dawid_skene": [posterior for _, posterior in fv_pairs],
                "keyfact_validation_label_dawid_skene": [label for label, _ in kv_pairs],
                "keyfact_validation_posterior_dawid_skene": [posterior for _, posterior in kv_pairs],
                "keyfact_alignment_label": [[_int(cell) for cell in cells] for cells in matrix],
                "keyfact_alignment_label_dawid_skene": [[label for label, _ in cells] for cells in ka_pairs],
                "keyfact_alignment_posterior_dawid_skene": [[posterior for _, posterior in cells]
                                                            for cells in ka_pairs],
            })
        if annotator_labels:
            row["adjudications"] = {
                "fact_verification": [{"sentence": i, "has_error": settled[("fv", pk)][0],
                                       "error_types": settled[("fv", pk)][1], "reason": settled[("fv", pk)][2],
                                       **settled_by[("fv", pk)]}
                                      for i, (pk, _) in enumerate(sents) if ("fv", pk) in settled],
                "keyfact_validation": [{"pred_keyfact": i, "useful": settled[("kv", pk)][0],
                                        "reason": settled[("kv", pk)][2], **settled_by[("kv", pk)]}
                                       for i, (pk, _) in enumerate(candidates[doc_id]) if ("kv", pk) in settled],
                "keyfact_alignment": [{"keyfact": k, "sentence": i, "aligned": settled[("ka", fact, sent)][0],
                                       "reason": settled[("ka", fact, sent)][2], **settled_by[("ka", fact, sent)]}
                                      for k, (fact, _) in enumerate(human[doc_id])
                                      for i, (sent, _) in enumerate(sents) if ("ka", fact, sent) in settled],
                "used_in_scores": use_settled,
            }
            row["item_flags"] = {
                "fact_verification": [{"annotator": names.get(a, ""), "sentence": i, "comment": c, "flagged_at": t}
                                      for i, (pk, _) in enumerate(sents) for a, c, t in flags.get(("fv", pk), [])],
                "keyfact_validation": [{"annotator": names.get(a, ""), "pred_keyfact": i, "comment": c,
                                        "flagged_at": t}
                                       for i, (pk, _) in enumerate(candidates[doc_id])
                                       for a, c, t in flags.get(("kv", pk), [])],
                "keyfact_alignment": [{"annotator": names.get(a, ""), "keyfact": k, "sentence": i, "comment": c,
                                       "flagged_at": t}
                                      for k, (fact, _) in enumerate(human[doc_id])
                                      for i, (sent, _) in enumerate(sents)
                                      for a, c, t in flags.get(("ka", fact, sent), [])],
            }
            row["annotator_labels"] = {
                "fact_verification": [{"annotator": names[a], "sentence": i, "has_error": e, "error_types": t}
                                      for i, votes in enumerate(fv_votes) for a, e, t in votes],
                "keyfact_validation": [{"annotator": names[a], "pred_keyfact": i, "useful": u}
                                       for i, (pk, _) in enumerate(candidates[doc_id]) for a, u in kv.get(pk, [])],
                "keyfact_alignment": [{"annotator": names[a], "keyfact": k, "sentence": s, "aligned": v}
                                      for k, (fact, _) in enumerate(human[doc_id])
                                      for s, (sent, _) in enumerate(sents) for a, v in ka.get((fact, sent), [])],
            }
        if assistance:
            row["assistance"] = {
                "fact_verification": [{"sentence": i, **shown.get(("fv", pk), {})} for i, (pk, _) in enumerate(sents)],
                "keyfact_validation": [{"pred_keyfact": i, **shown.get(("kv", pk), {})}
                                       for i, (pk, _) in enumerate(candidates[doc_id])],
                "keyfact_alignment": [{"keyfact": k, **shown.get(("ka", pk), {})}
                                      for k, (pk, _) in enumerate(human[doc_id])],
            }
        yield row


NO_OPINION = (None, None)  # An item without a counted vote: no Dawid-Skene label, as it has no majority.
POSTERIOR_DIGITS = 4


def _chunk_opinions(opinions, summaries, sentences, candidates, human) -> tuple[dict, dict, dict]:
    """item key -> (Dawid-Skene label, posterior rounded) for the sentences, candidates and pairs of one chunk."""
    fv_keys = [pk for summary in summaries for pk, _ in sentences[summary["pk"]]]
    kv_keys = [pk for facts in candidates.values() for pk, _ in facts]
    ka_keys = [fact * PAIR + sent for summary in summaries for fact, _ in human[summary["document_id"]]
               for sent, _ in sentences[summary["pk"]]]
    found = []
    for task, keys in ((FV, fv_keys), (KV, kv_keys), (KA, ka_keys)):
        opinion = opinions.get(task)
        looked_up = opinion.lookup(keys) if opinion is not None else {}
        found.append({key: (label, round(posterior, POSTERIOR_DIGITS)) for key, (label, posterior)
                      in looked_up.items()})
    return found[0], found[1], found[2]


def release_results(project: Project, *, chunk: int = DOCUMENT_CHUNK, with_text: bool = True) -> Iterator[dict]:
    """The rows of a release's majority labels (exports.release), shaped as summary_results rows: the scores are
    the release's own, the composite their mean. No AI judgment was shown and no annotator vote is known."""
    document_ids = list(Document.objects.filter(project=project).order_by("domain", "uid").values_list("pk", flat=True))
    for start in range(0, len(document_ids), chunk):
        ids = document_ids[start:start + chunk]
        candidates = defaultdict(list)
        for document_id, text in (KeyFact.objects.filter(document_id__in=ids).exclude(origin=KeyFact.Origin.HUMAN)
                                  .order_by("document_id", "index").values_list("document_id", "text")):
            candidates[document_id].append(text)
        sentences = defaultdict(list)
        for summary_id, text in (SummarySentence.objects.filter(summary__document_id__in=ids)
                                 .order_by("summary_id", "index").values_list("summary_id", "text")):
            sentences[summary_id].append(text)
        labels = (ReleaseLabels.objects.filter(summary__document_id__in=ids).select_related("summary__document")
                  .order_by("summary__document__domain", "summary__document__uid", "summary__model"))
        if not with_text:
            labels = labels.defer("summary__text", "summary__document__text")
        for row in labels:
            summary, document = row.summary, row.summary.document
            n = len(row.fact_verification_label)
            yield {
                "uid": document.uid, "doc_id": document.doc_id, "source": document.source, "domain": document.domain,
                "length": document.length, "input_type": document.input_type, "redact_type": document.redact_type,
                "model": summary.model, "reference": document.reference,
                "document": document.text if with_text else None, "summary": summary.text if with_text else None,
                "sentences": sentences[summary.pk],
                "fact_verification_label": row.fact_verification_label,
                "fact_verification_error_type": row.fact_verification_error_type,
                "faithfulness_score": row.faithfulness_score,
                "pred_keyfact": candidates[document.pk], "keyfact_validation_label": row.keyfact_validation_label,
                "keyfact": row.keyfact, "keyfact_label": row.keyfact_label, "completeness": row.completeness,
                "sentence_label": row.sentence_label, "conciseness": row.conciseness,
                "composite": composite(row.faithfulness_score, row.completeness, row.conciseness),
                "_ai": [None] * n, "_fv_votes": [[] for _ in range(n)],
            }


def _alignment(matrix: list[list[bool | None]], n_sentences: int):
    """keyfact_label, sentence_label, completeness, conciseness from the KA majority matrix.

    Complete matrix: exports.scores.key_fact_alignment_scores. With undecided cells, a key-fact (sentence) is
    aligned if any decided cell says so, unknown if it depends on an undecided one; the scores are then None.
    """
    if all(cell is not None for row in matrix for cell in row):
        result = key_fact_alignment_scores([[bool(c) for c in row] for row in matrix], n_sentences)
        return result.keyfact_label, result.sentence_label, result.completeness, result.conciseness
    columns = [[row[s] for row in matrix] for s in range(n_sentences)]
    keyfact_label = [_any(row) for row in matrix]
    sentence_label = [_any(column) for column in columns]
    return keyfact_label, sentence_label, completeness(keyfact_label), conciseness(sentence_label)


def _any(cells: list[bool | None]) -> int | None:
    if any(cells):
        return 1
    return None if any(cell is None for cell in cells) else 0
