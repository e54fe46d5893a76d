"""Under the offline labeler an FV attention check shows exactly the judgment the labeler gives its sentence against
the HIT's document (paper G.3: checks look exactly like real items). The labeler is public and deterministic (the
bundled model, a documented threshold, a reason that states its similarity figure), so a judgment set by the
platform would show: anybody can recompute it. These tests recompute it with a labeler of their own and with the
model itself, and find exactly what the HIT shows, for checks and real sentences alike."""

import json
from collections import Counter

import numpy as np
import pytest
from django.core.management import call_command

from annotation.models import AttentionCheck, Hit, Unit
from annotation.quality.injection import CERTAINLY_FOREIGN_BELOW
from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from assist import embeddings
from assist.config import backend_config
from assist.llm.registry import build_backend
from corpus.importing import import_dataset
from corpus.models import SummarySentence
from tests.quality.conftest import with_checks
from tests.work import crowd_annotator

pytestmark = pytest.mark.django_db
Kind = AttentionCheck.Kind

# Three domains. The labeler passes a medical summary sentence whose words the news document nearly all uses against
# it ("The hospital added staff for patients."); nothing foreign passes against the sport document.
DOCUMENTS = {
    "news": ("The city council voted on Tuesday to expand the public hospital. The expansion will add two hundred "
             "beds by next year. The mayor said the project will cost forty million dollars. Nurses welcomed the "
             "decision but asked for more staff.",
             {"m-one": "The council approved a hospital expansion adding two hundred beds. It will cost forty "
                       "million dollars.",
              "m-two": "The mayor expanded the hospital. Nurses asked for more staff."}),
    "medical": ("The study followed three hundred patients with high blood pressure. Patients who walked every day "
                "lowered their blood pressure. Hospital staff measured each patient every month. The effect was "
                "strongest in older patients.",
                {"m-one": "Daily walking lowered blood pressure in a study of three hundred patients. Older "
                          "patients benefited most.",
                 "m-two": "Hospital staff measured patients monthly. The hospital added staff for patients. Walking "
                          "had no effect."}),
    "sport": ("The home team won the final by three goals to one. Their captain scored twice in the second half. "
              "Fans filled the stadium despite the rain. The coach praised the defence after the match.",
              {"m-one": "The home team won the final three to one. The captain scored two goals.",
               "m-two": "Fans stayed away because of the rain. The coach praised the defence."}),
}


def import_three_domains(project):
    rows = [{"uid": f"doc-{domain}", "doc_id": f"doc-{domain}", "source": "Hand", "domain": domain,
             "input_type": "non-dialogue", "document": text, "model": model, "summary": summary}
            for domain, (text, summaries) in DOCUMENTS.items() for model, summary in summaries.items()]
    import_dataset(project=project, data="\n".join(json.dumps(row) for row in rows).encode(), filename="hand.jsonl")


@pytest.fixture
def assisted(project):
    """The real offline assistance (run_assist: mappings and the labeler's pre-labels), then FV HITs with checks."""
    import_three_domains(project)
    call_command("run_assist", "--project", project.slug, verbosity=0)
    with_checks(project, 0.34)
    build_hits(project, "fv")
    return project


def public_labeler():
    """A labeler of the test's own, built from the public settings: nothing is shared with the build's."""
    return build_backend("offline", backend_config())


def source_of(unit) -> list[str]:
    return list(unit.hit.document.sentences.order_by("index").values_list("text", flat=True))


def labeler_says(labeler, unit) -> tuple[str, str]:
    (judgement,) = labeler.label_summary(source_of(unit), [unit.text])
    return judgement.category, judgement.reason


def fv_units(project):
    return list(Unit.objects.filter(hit__project=project, task="fv")
                .select_related("hit__document", "attention_check__origin_document"))


def test_every_fv_item_shows_what_the_public_labeler_says_of_its_sentence_checks_and_real_alike(assisted):
    labeler = public_labeler()
    units = fv_units(assisted)
    checks = [unit for unit in units if hasattr(unit, "attention_check")]
    assert checks and len(checks) < len(units)
    for unit in units:
        assert unit.ai_category and unit.ai_reason
        assert (unit.ai_category, unit.ai_reason) == labeler_says(labeler, unit), unit.text
    assert len({unit.ai_source for unit in units}) == 1


def test_a_checks_kind_follows_the_labelers_judgment_and_both_kinds_are_made_where_it_allows(assisted):
    labeler = public_labeler()
    kinds: dict[str, Counter] = {}
    for unit in fv_units(assisted):
        check = getattr(unit, "attention_check", None)
        if check is None:
            continue
        category, _ = labeler_says(labeler, unit)
        if category == "no_error":  # The AI is wrong: the sentence comes from another document.
            assert check.kind == Kind.FV_AI_SAYS_CORRECT
            assert check.expected == {"has_error": True, "ai_right": False}
        else:
            assert check.kind == Kind.FV_AI_SAYS_ERROR
            assert check.expected == {"has_error": True, "ai_right": True}
        document = unit.hit.document
        assert check.origin_document.domain != document.domain
        assert SummarySentence.objects.filter(summary__document=check.origin_document, text=unit.text).exists()
        kinds.setdefault(document.domain, Counter())[check.kind] += 1
    # Where the labeler passes some foreign sentence, both kinds are made; against the sport document it passes
    # none, so every check there says error (the only judgment the labeler gives a foreign sentence there).
    assert set(kinds["news"]) | set(kinds["medical"]) == {Kind.FV_AI_SAYS_CORRECT, Kind.FV_AI_SAYS_ERROR}
    assert set(kinds["sport"]) == {Kind.FV_AI_SAYS_ERROR}


def test_a_check_sentence_is_certainly_foreign_by_the_public_model(assisted):
    checks = [unit for unit in fv_units(assisted) if hasattr(unit, "attention_check")]
    for unit in checks:
        source = embeddings.encode(source_of(unit))
        vector = embeddings.encode([unit.text])[0]
        cosines = source @ vector / (np.linalg.norm(source, axis=1) * np.linalg.norm(vector))
        assert cosines.max() < CERTAINLY_FOREIGN_BELOW, unit.text


def test_building_again_restores_a_stale_judgment_on_hits_nobody_holds_and_leaves_held_ones_alone(assisted):
    held = reserve_next_hit(crowd_annotator("w"), assisted, "fv", confirmed=True).hit
    stale = Unit.objects.filter(hit__project=assisted, task="fv", attention_check__isnull=False)
    Unit.objects.filter(pk__in=stale.values("pk")).update(ai_reason="Offline similarity labeler (no LLM): stale.")
    build_hits(assisted, "fv")
    labeler = public_labeler()
    for unit in fv_units(assisted):
        if not hasattr(unit, "attention_check"):
            continue
        if unit.hit_id == held.pk:
            assert unit.ai_reason == "Offline similarity labeler (no LLM): stale."  # what its annotator saw
        else:
            assert (unit.ai_category, unit.ai_reason) == labeler_says(labeler, unit)
    assert Hit.objects.filter(project=assisted, task="fv").exclude(pk=held.pk).exists()
