"""Hand-built labels for the analytics tests: a few units, a few annotators, answers chosen by the test."""

from django.utils import timezone

from annotation.models import Annotator, Assignment, AttentionCheck, Grade, Hit, Label, Task, Unit
from corpus.models import Document, Project, Summary, SummarySentence


def fv_units(project: Project, n_units: int, *, domain: str = "news") -> tuple[Hit, list[Unit]]:
    """One document, one summary with `n_units` sentences, its FV HIT and units (no checks)."""
    document = Document.objects.create(project=project, uid=f"doc-{domain}", doc_id="1", source="S", domain=domain,
                                       input_type="non-dialogue", length="short", text="A text.", word_count=2,
                                       text_sha256="x")
    summary = Summary.objects.create(document=document, model="m", text="s", text_sha256="y")
    hit = Hit.objects.create(project=project, task=Task.FACT_VERIFICATION, document=document, summary=summary,
                             position=Hit.objects.filter(project=project).count())
    units = []
    for index in range(n_units):
        sentence = SummarySentence.objects.create(summary=summary, index=index, text=f"Sentence {index}.")
        units.append(Unit.objects.create(hit=hit, task=Task.FACT_VERIFICATION, position=index,
                                         summary_sentence=sentence, text=sentence.text))
    return hit, units


def annotate(hit: Hit, units: list[Unit], answers: list[bool | None], *, name: str,
             provider: str = Annotator.Provider.PROLIFIC, passed: bool | None = None, submitted_at=None,
             checks: tuple[int, int] | None = None) -> Assignment:
    """A submitted assignment of `name` on `hit` with has_error answers per unit (None: no label), submitted now
    unless `submitted_at` says when. `passed`: a grade with one check, failed or not; `checks`: (checks, failed)
    of a passing grade."""
    annotator, _ = Annotator.objects.get_or_create(provider=provider, external_id=name)
    now = timezone.now()
    assignment = Assignment.objects.create(hit=hit, annotator=annotator, status=Assignment.Status.SUBMITTED,
                                           expires_at=now, submitted_at=submitted_at or now)
    for unit, answer in zip(units, answers):
        if answer is not None:
            Label.objects.create(assignment=assignment, unit=unit, annotator=annotator, has_error=answer,
                                 error_types=["entity"] if answer else [])
    if passed is not None:
        Grade.objects.create(assignment=assignment, passed=passed, checks_total=1, checks_failed=int(not passed))
    elif checks is not None:
        Grade.objects.create(assignment=assignment, passed=True, checks_total=checks[0], checks_failed=checks[1])
    return assignment


def make_check(hit: Hit) -> Unit:
    unit = Unit.objects.create(hit=hit, task=Task.FACT_VERIFICATION, position=hit.units.count(), text="Foreign.")
    AttentionCheck.objects.create(unit=unit, kind=AttentionCheck.Kind.FV_AI_SAYS_CORRECT,
                                  expected={"has_error": True})
    return unit
