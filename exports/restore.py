"""Importing a benchmark export back (the round trip): corpus, human key-facts and annotator-level labels.

A dedicated path rather than corpus.importing: the release rows carry labels and scores the dataset import
has no place for. The corpus goes through corpus.importing.import_dataset (same validation, line numbers
kept: one release row is one line); the export-only fields are checked here. Labels need an export made with
--annotator-labels: each pseudonymous annotator becomes an Annotator (provider "simulated" when the export says
its labels were simulated, else "link" with external id "benchmark:<pseudonym>"), each (HIT, annotator) one
submitted Assignment. Key-fact statuses come from the export's `keyfact` list (the human key-facts), and the
KA HITs are built for them, so that the majority labels and the scores of the export are reproduced. The
evaluators' scores (exports.machine_scores) come back as imported evaluator scores, per summary and per sentence.
"""

import json
from collections import defaultdict

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from annotation.models import Adjudication, Annotator, Assignment, ItemFlag, Label, Task, Unit
from annotation.services.hits import build_hits, create_alignment_hits
from corpus.importing import DatasetError, RowError, import_dataset
from corpus.models import Document, KeyFact, Project, Summary
from corpus.storable_text import unstorable

from .aggregation import DAWID_SKENE_FIELDS, REDUNDANCY_FIELDS, RELEASE_FIELDS
from .machine_scores import FIELDS as MACHINE_FIELDS
from .machine_scores import (
    MACHINE,
    SENTENCE_FIELDS,
    ImportedScores,
    sentence_values,
    store_imported_scores,
    summary_scores,
)

CORPUS_FIELDS = ("uid", "doc_id", "source", "domain", "length", "input_type", "redact_type", "model", "reference",
                 "document", "summary", "sentences", "pred_keyfact")
EXPORT_ONLY = set(RELEASE_FIELDS) - set(CORPUS_FIELDS) | {"composite", "label_source", "annotator_labels",
                                                           "item_flags", "adjudications", "assistance",
                                                           *DAWID_SKENE_FIELDS, *REDUNDANCY_FIELDS,
                                                           "summary_success_state", *MACHINE_FIELDS}


def read_rows(data: bytes) -> list[dict]:
    text = data.decode("utf-8-sig")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError([RowError(exc.lineno, "", f"not valid JSON ({exc.msg})")]) from None
    rows, errors = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                errors.append(RowError(number, "", f"not valid JSON ({exc.msg} at column {exc.colno})"))
    if errors:
        raise DatasetError(errors)
    return rows


def _is_flag(item) -> bool:
    comment = item.get("comment") if isinstance(item, dict) else None
    return (isinstance(comment, str) and 0 < len(comment.strip()) and len(comment) <= ItemFlag.MAX_COMMENT
            and unstorable(comment) is None and isinstance(item.get("annotator"), str))


@transaction.atomic
def import_benchmark(*, project: Project, data: bytes) -> dict:
    rows = read_rows(data)
    errors = []
    machine = []
    for line, row in enumerate(rows, start=1):
        machine.append(_machine_scores(row, line, errors))
        unknown = sorted(set(row) - set(CORPUS_FIELDS) - EXPORT_ONLY)
        if unknown:
            errors.append(RowError(line, unknown[0], f"unknown field(s): {', '.join(unknown)}"))
        flags = row.get("item_flags") or {}
        if not isinstance(flags, dict) or not all(
                isinstance(group, list) and all(_is_flag(item) for item in group) for group in flags.values()):
            errors.append(RowError(line, "item_flags", "each flag needs an annotator and a comment of 1 to "
                                                       f"{ItemFlag.MAX_COMMENT:,} characters"))
        settled = row.get("adjudications") or {}
        answers = {"fact_verification": "has_error", "keyfact_validation": "useful", "keyfact_alignment": "aligned"}
        if not isinstance(settled, dict) or not all(
                name == "used_in_scores" or (name in answers and isinstance(group, list) and all(
                    isinstance(item, dict) and isinstance(item.get(answers[name]), bool)
                    and isinstance(item.get("reason"), str) and unstorable(item["reason"]) is None for item in group))
                for name, group in settled.items()):
            errors.append(RowError(line, "adjudications", "each adjudication needs its yes/no answer and a reason"))
        if "annotator_labels" not in row:
            errors.append(RowError(line, "annotator_labels", "missing: export with --annotator-labels to restore "
                                                             "labels"))
    if errors:
        raise DatasetError(errors)
    corpus = []
    for row in rows:
        values = {name: row[name] for name in CORPUS_FIELDS if row.get(name) is not None}
        extra = [fact for fact in row.get("keyfact") or [] if fact not in (row.get("pred_keyfact") or [])]
        if extra:
            values["keyfact"] = extra
        corpus.append(json.dumps(values, ensure_ascii=False))
    import_dataset(project=project, data="\n".join(corpus).encode(), filename="benchmark.jsonl")

    documents = {uid: pk for pk, uid in Document.objects.filter(project=project).values_list("pk", "uid")}
    # The human key-facts are the export's `keyfact` lists.
    for row in rows:
        human = set(row.get("keyfact") or [])
        facts = KeyFact.objects.filter(document_id=documents[row["uid"]])
        facts.exclude(origin=KeyFact.Origin.HUMAN).update(status=KeyFact.Status.REJECTED)
        facts.filter(text__in=human).update(status=KeyFact.Status.ACCEPTED)
    build_hits(project, Task.FACT_VERIFICATION)
    build_hits(project, Task.KEYFACT_VALIDATION)
    for document in Document.objects.filter(project=project).select_related("project"):
        create_alignment_hits(document)
    summary_ids = {(uid, model): pk for pk, uid, model in Summary.objects.filter(document__project=project)
                   .values_list("pk", "document__uid", "model")}
    store_imported_scores(project=project, release="benchmark export", summaries=[
        ImportedScores(summary_ids[row["uid"], row["model"]], by_dimension, by_sentence, len(row["sentences"]))
        for row, (by_dimension, by_sentence) in zip(rows, machine)])
    return _restore_labels(project, rows, documents)


def _machine_scores(row: dict, line: int, errors: list[RowError]) -> tuple[dict, dict]:
    """The row's evaluator scores per dimension and per sentence, its problems added to `errors`."""
    def report(field):
        return lambda message: errors.append(RowError(line, field, message))

    sentences = row.get("sentences")
    n = len(sentences) if isinstance(sentences, list) else 0
    return ({dimension: summary_scores(row[field], report(field)) for dimension, field in MACHINE.items()
             if row.get(field) is not None},
            {field: sentence_values(row[field], field, n, report(field)) for field in SENTENCE_FIELDS
             if row.get(field) is not None})


def _restore_labels(project: Project, rows: list[dict], documents: dict[str, int]) -> dict:
    summaries = {(uid, model): pk for pk, uid, model in Summary.objects.filter(document__project=project)
                 .values_list("pk", "document__uid", "model")}
    candidates, human = defaultdict(list), defaultdict(list)
    for pk, document_id, origin, status in KeyFact.objects.filter(document__project=project).order_by(
            "document_id", "index").values_list("pk", "document_id", "origin", "status"):
        if origin != KeyFact.Origin.HUMAN:
            candidates[document_id].append(pk)
        if status == KeyFact.Status.ACCEPTED:
            human[document_id].append(pk)
    units = {}
    for pk, hit_id, task, summary_id, _document_id, index, keyfact_id in Unit.objects.filter(
            hit__project=project, attention_check__isnull=True).values_list(
            "pk", "hit_id", "task", "hit__summary_id", "hit__document_id", "summary_sentence__index", "keyfact_id"):
        if task == Task.FACT_VERIFICATION:
            units[task, summary_id, index] = (pk, hit_id)
        elif task == Task.KEYFACT_VALIDATION:
            units[task, keyfact_id] = (pk, hit_id)
        else:
            units[task, summary_id, keyfact_id, index] = (pk, hit_id)

    people, assignments, labels, seen_kv = {}, {}, [], set()
    now = timezone.now()

    def person(name: str, simulated: bool) -> Annotator:
        if name not in people:
            provider = Annotator.Provider.SIMULATED if simulated else Annotator.Provider.LINK
            people[name] = Annotator.objects.get_or_create(provider=provider, external_id=f"benchmark:{name}")[0]
        return people[name]

    flags, seen_kv_flags = [], set()
    adjudications, use_settled = {}, False

    def flag(unit_key, name, simulated, comment):
        unit_id, hit_id = units[unit_key]
        add(unit_key, name, simulated, None)
        flags.append(ItemFlag(assignment=assignments[hit_id, person(name, simulated).pk], unit_id=unit_id,
                              comment=comment))

    def add(unit_key, name, simulated, answers):
        unit_id, hit_id = units[unit_key]
        annotator = person(name, simulated)
        if (hit_id, annotator.pk) not in assignments:
            assignments[hit_id, annotator.pk] = Assignment(
                hit_id=hit_id, annotator=annotator, status=Assignment.Status.SUBMITTED, reserved_at=now,
                expires_at=now, submitted_at=now, submission_key=f"benchmark-{hit_id}-{annotator.pk}")
        if answers is not None:
            labels.append(Label(assignment=assignments[hit_id, annotator.pk], unit_id=unit_id, annotator=annotator,
                                **answers))

    for row in rows:
        simulated = row.get("label_source") == "simulated"
        summary, document = summaries[row["uid"], row["model"]], documents[row["uid"]]
        given = row["annotator_labels"]
        for item in given.get("fact_verification", []):
            add((Task.FACT_VERIFICATION, summary, item["sentence"]), item["annotator"], simulated,
                {"has_error": item["has_error"], "error_types": item.get("error_types") or []})
        for item in given.get("keyfact_validation", []):
            fact = candidates[document][item["pred_keyfact"]]
            if (fact, item["annotator"]) in seen_kv:  # KV labels repeat on every row of the document.
                continue
            seen_kv.add((fact, item["annotator"]))
            add((Task.KEYFACT_VALIDATION, fact), item["annotator"], simulated, {"useful": item["useful"]})
        for item in given.get("keyfact_alignment", []):
            fact = human[document][item["keyfact"]]
            add((Task.KEYFACT_ALIGNMENT, summary, fact, item["sentence"]), item["annotator"], simulated,
                {"aligned": item["aligned"]})
        settled = row.get("adjudications") or {}
        use_settled = use_settled or bool(settled.get("used_in_scores"))
        for item in settled.get("fact_verification", []):
            unit_id, _ = units[Task.FACT_VERIFICATION, summary, item["sentence"]]
            adjudications[unit_id] = Adjudication(unit_id=unit_id, has_error=item["has_error"],
                                                  error_types=item.get("error_types") or [], reason=item["reason"])
        for item in settled.get("keyfact_validation", []):
            unit_id, _ = units[Task.KEYFACT_VALIDATION, candidates[document][item["pred_keyfact"]]]
            adjudications[unit_id] = Adjudication(unit_id=unit_id, useful=item["useful"], reason=item["reason"])
        for item in settled.get("keyfact_alignment", []):
            unit_id, _ = units[Task.KEYFACT_ALIGNMENT, summary, human[document][item["keyfact"]], item["sentence"]]
            adjudications[unit_id] = Adjudication(unit_id=unit_id, aligned=item["aligned"], reason=item["reason"])
        given = row.get("item_flags") or {}
        for item in given.get("fact_verification", []):
            flag((Task.FACT_VERIFICATION, summary, item["sentence"]), item["annotator"], simulated, item["comment"])
        for item in given.get("keyfact_validation", []):
            fact = candidates[document][item["pred_keyfact"]]
            if (fact, item["annotator"]) not in seen_kv_flags:  # Repeated on every row of the document.
                seen_kv_flags.add((fact, item["annotator"]))
                flag((Task.KEYFACT_VALIDATION, fact), item["annotator"], simulated, item["comment"])
        for item in given.get("keyfact_alignment", []):
            flag((Task.KEYFACT_ALIGNMENT, summary, human[document][item["keyfact"]], item["sentence"]),
                 item["annotator"], simulated, item["comment"])
    # Labels only where the export has them: none on the attention checks built into the HITs here.
    labelled = defaultdict(int)
    for label in labels:
        labelled[label.assignment.hit_id, label.annotator.pk] += 1
    units_of = dict(Unit.objects.filter(hit__project=project).order_by().values("hit").annotate(n=Count("pk"))
                    .values_list("hit", "n"))
    for (hit_id, annotator_id), assignment in assignments.items():
        assignment.labelled_every_unit = labelled[hit_id, annotator_id] == units_of.get(hit_id, 0)
    Assignment.objects.bulk_create(assignments.values(), batch_size=2000)
    for label in labels:
        label.assignment_id = label.assignment.pk
    Label.objects.bulk_create(labels, batch_size=5000)
    for item_flag in flags:
        item_flag.assignment_id = item_flag.assignment.pk
    ItemFlag.objects.bulk_create(flags, batch_size=5000)
    Adjudication.objects.bulk_create(adjudications.values(), batch_size=5000)
    if use_settled:
        Project.objects.filter(pk=project.pk).update(adjudication_in_aggregation=True)
    return {"summaries": len(rows), "annotators": len(people), "assignments": len(assignments),
            "labels": len(labels), "flags": len(flags), "adjudications": len(adjudications)}
