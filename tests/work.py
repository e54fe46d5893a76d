"""Helpers for tests of the annotation work: a small corpus with AI assistance, HITs built, labels given."""

import json
from pathlib import Path

from django.contrib.auth.models import Permission
from django.utils import timezone

from annotation.ai_agreement import ai_right_for
from annotation.models import Annotator, Assignment, AttentionCheck, Hit, ProjectAnnotator, Unit
from annotation.services.answers import save_answers
from annotation.services.assignment import reserve_next_hit, submit_assignment
from annotation.services.hits import build_hits
from assist.models import ContextualMapping, PreLabel
from corpus.importing import import_dataset
from corpus.models import KeyFact, Project, SummarySentence

SMALL_JSONL = Path(__file__).resolve().parent / "fixtures" / "import" / "small.jsonl"


def without_attention_checks(project: Project) -> Project:
    """These tests are about the units a corpus makes; attention checks have their own tests (tests/quality)."""
    project.attention_check_rate = 0
    project.save(update_fields=["attention_check_rate"])
    return project


def import_small(project: Project) -> Project:
    without_attention_checks(project)
    import_dataset(project=project, data=SMALL_JSONL.read_bytes(), filename="small.jsonl")
    return project


# Made-up names, a sentence's neighbours naming others, so that a name can be exchanged for another of its own.
PEOPLE = ("Anna Lindqvist", "Tomas Berger", "Maria Okafor", "Jonas Petrak", "Lena Hofmann")
PLACES = ("Halden", "Oskarsund", "Vireton", "Marlby", "Tessin")


def import_generated(project: Project, *, documents: int = 10, summarizers: int = 4, sentences: int = 3,
                     words_per_sentence: int = 12, document_sentences: int | None = None,
                     names: bool = False) -> Project:
    """A synthetic corpus: `documents` x `summarizers` summaries, two candidate key-facts per document. With
    `names`, every document sentence also names a person and a place (five of each in turn)."""
    rows = []
    for d in range(documents):
        text = " ".join(" ".join(f"Word{d}x{s}x{w}" for w in range(words_per_sentence))
                        + (f" with {PEOPLE[(d + s) % len(PEOPLE)]} in {PLACES[(d + s) % len(PLACES)]}" if names else "")
                        + "." for s in range(document_sentences or sentences * 4))
        for m in range(summarizers):
            rows.append({
                "uid": f"gen-{d}", "doc_id": f"gen-{d}", "source": "Gen", "domain": ("news", "sport")[d % 2],
                "input_type": "non-dialogue", "model": f"model-{m}", "document": text,
                "summary": " ".join(f"Summary {m} sentence {s} of document {d}." for s in range(sentences)),
                "pred_keyfact": [f"Fact {k} of document {d}." for k in range(2)],
            })
    data = "\n".join(json.dumps(row) for row in rows).encode()
    without_attention_checks(project)
    import_dataset(project=project, data=data, filename="generated.jsonl")
    return project


def add_assistance(project: Project, *, backend: str = "offline-similarity") -> None:
    """A contextual mapping for every summary sentence and key-fact, and an ok pre-label per summary sentence."""
    for sentence in SummarySentence.objects.filter(summary__document__project=project):
        ContextualMapping.objects.create(summary_sentence=sentence, ranked=[1, 0], scores=[0.9, 0.5],
                                         highlighted=[1], fraction=0.3, model_name="test", model_version="1")
        flagged = "demolish" in sentence.text or "<script>" in sentence.text
        PreLabel.objects.create(
            summary_sentence=sentence, status=PreLabel.Status.OK, backend=backend, model="all-MiniLM-L6-v2",
            prompt_version="test", category="relation" if flagged else "no_error",
            reason=f"Reason for <{sentence.index}>: the source says so." if not flagged else
            "The source says the pier is rebuilt, not demolished.",
        )
    for fact in KeyFact.objects.filter(document__project=project):
        ContextualMapping.objects.create(keyfact=fact, ranked=[0, 1], scores=[0.8, 0.2], highlighted=[0],
                                         fraction=0.3, model_name="test", model_version="1")


def build_all(project: Project) -> None:
    for task in ("fv", "kv", "ka"):
        build_hits(project, task)


def may_create_projects(user):
    """Make `user` a manager account as the operations guide does: Django's permission to add projects, not staff."""
    user.user_permissions.add(Permission.objects.get(content_type__app_label="corpus", codename="add_project"))
    return user


def annotator_for(user) -> Annotator:
    annotator, _ = Annotator.objects.get_or_create(provider=Annotator.Provider.ACCOUNT, external_id=str(user.pk),
                                                   defaults={"user": user})
    return annotator


def qualify(annotator: Annotator, *projects: Project) -> Annotator:
    """Record that `annotator` passed the screening test of `projects` (every project that exists now if none)."""
    for project in projects or Project.objects.all():
        standing, _ = ProjectAnnotator.objects.get_or_create(annotator=annotator, project=project)
        standing.qualified_at = timezone.now()
        standing.save(update_fields=["qualified_at"])
    return annotator


def status_of(annotator: Annotator, project: Project) -> str:
    return annotator.status_in(project)


def set_status(annotator: Annotator, project: Project, status: str) -> None:
    ProjectAnnotator.objects.update_or_create(annotator=annotator, project=project, defaults={"status": status})


def crowd_annotator(name: str, *projects: Project) -> Annotator:
    """A crowd worker who has passed the screening test (crowd workers need it before their first HIT) of
    `projects`, or of every project that exists now."""
    return qualify(Annotator.objects.create(provider=Annotator.Provider.PROLIFIC, external_id=name), *projects)


def answers_for(unit, *, yes: bool = True) -> dict:
    if unit.task == "fv":
        answer = {"has_error": not yes, "error_types": [] if yes else ["entity"]}
        if "ai_right" in unit.question_fields(unit.hit):
            answer["ai_right"] = ai_right_for(unit.ai_category, answer["has_error"])
        return answer
    return {"useful": yes} if unit.task == "kv" else {"aligned": yes}


def complete(assignment, *, yes: bool = True):
    """Answer every unit of the assignment's HIT and submit it."""
    units = list(assignment.hit.units.all())
    save_answers(assignment=assignment, answers={unit: answers_for(unit, yes=yes) for unit in units})
    return submit_assignment(assignment=assignment)


def work_through(annotator: Annotator, project: Project, task: str, *, yes: bool = True):
    assignment = reserve_next_hit(annotator, project, task, confirmed=True)
    assert assignment is not None
    complete(assignment, yes=yes)
    return assignment


def race(function, items, *, timeout: float = 120) -> list:
    """Call `function(item)` for every item on its own thread, all released at once; its results, in item order.

    Each thread closes its own database connection; an exception in any thread fails the caller's test.
    """
    import threading

    from django.db import connection

    items = list(items)
    barrier = threading.Barrier(len(items))
    results: list = [None] * len(items)
    errors: list[BaseException] = []

    def run(position, item):
        try:
            barrier.wait()
            results[position] = function(item)
        except BaseException as exc:  # noqa: BLE001 - reported by the caller's thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=pair) for pair in enumerate(items)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not errors, errors
    return results


# --- Labelling under a redundancy policy (tests/annotation/test_topups.py, test_costs.py).

def passing(unit: Unit, yes: bool) -> dict:
    """`yes` (no error, useful, aligned) on real units; the expected answer on attention checks."""
    check = AttentionCheck.objects.filter(unit=unit).first()
    if check is None:
        return answers_for(unit, yes=yes)
    answers = {**answers_for(unit), **{k: v for k, v in check.expected.items()
                                        if k != "ai_right" or "ai_right" in unit.question_fields(unit.hit)}}
    if answers.get("has_error"):
        answers["error_types"] = ["out_of_article"]
    return answers


def work_next_hit(annotator, project, task: str, *, split: Unit | None = None, yes: bool = True) -> Assignment:
    """Reserve the annotator's next HIT of `task` and answer it: `yes` everywhere, except `not yes` on `split` (a
    first-round unit) and on its top-ups."""
    assignment = reserve_next_hit(annotator, project, task, confirmed=True)
    assert assignment is not None
    units = list(assignment.hit.units.all())
    save_answers(assignment=assignment, answers={
        unit: passing(unit, (not yes) if split is not None and split.pk in (unit.pk, unit.origin_id) else yes)
        for unit in units})
    submit_assignment(assignment=assignment)
    return assignment


def first_round_hit(project, task: str) -> Hit:
    return Hit.objects.filter(project=project, task=task, round=0).order_by("position").first()
