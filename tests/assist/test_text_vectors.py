"""Summary sentences' and key-facts' embeddings are kept per project and model (assist.text_vectors): the contextual
mapping keeps what it embeds, and a HIT build disguises its attention checks with those very vectors instead of
calling the model again. Real bundled model, no network."""

from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from annotation.models import Unit
from annotation.services.hits import build_hits
from assist import embeddings
from assist.models import TextEmbedding
from assist.text_vectors import stored_vectors, text_vectors
from corpus.importing import import_dataset
from corpus.models import KeyFact, Project, SummarySentence
from tests.quality.conftest import with_checks

SMALL_JSONL = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "small.jsonl"

pytestmark = pytest.mark.django_db



def corpus_texts(project) -> set[str]:
    return (set(SummarySentence.objects.filter(summary__document__project=project).values_list("text", flat=True))
            | set(KeyFact.objects.filter(document__project=project).values_list("text", flat=True)))


def test_the_mapping_keeps_the_vector_of_every_summary_sentence_and_key_fact(project):
    import_dataset(project=project, data=SMALL_JSONL.read_bytes(), filename="small.jsonl")
    call_command("run_assist", "--project", project.slug, verbosity=0)
    texts = sorted(corpus_texts(project))
    kept = stored_vectors(project.pk, embeddings.model_identity(), texts)
    assert sorted(kept) == texts
    # The very vectors the model gives each text on its own (batching moves the last bits only).
    np.testing.assert_allclose(np.stack([kept[text] for text in texts]), embeddings.encode(texts), atol=1e-5)


def test_a_build_after_the_mapping_embeds_none_of_the_corpus_again(project, encode_calls):
    import_dataset(project=project, data=SMALL_JSONL.read_bytes(), filename="small.jsonl")
    call_command("run_assist", "--project", project.slug, verbosity=0)
    with_checks(project, 0.34)
    encode_calls.clear()
    build_hits(project, "fv")
    checks = Unit.objects.filter(hit__project=project, attention_check__isnull=False)
    assert checks.exists() and all(check.highlighted for check in checks)
    # Only a text the platform made (a name-swapped sentence) may still need the model.
    assert not {text for call in encode_calls for text in call} & corpus_texts(project)


def test_a_text_without_a_kept_vector_is_embedded_once_and_kept(project, encode_calls):
    first = text_vectors(project.pk, ["The council met.", "Rain fell.", "The council met."])
    assert encode_calls == [["The council met.", "Rain fell."]]
    again = text_vectors(project.pk, ["Rain fell.", "The council met."])
    assert len(encode_calls) == 1
    for text in first:
        np.testing.assert_array_equal(first[text], again[text])
    assert TextEmbedding.objects.filter(project=project).count() == 2


def test_vectors_are_kept_per_project_and_leave_with_it(project, encode_calls):
    text_vectors(project.pk, ["The council met."])
    other = Project.objects.create(slug="beta", name="Beta")
    assert stored_vectors(other.pk, embeddings.model_identity(), ["The council met."]) == {}
    text_vectors(other.pk, ["The council met."])
    assert len(encode_calls) == 2
    project.delete()
    assert list(TextEmbedding.objects.values_list("project__slug", flat=True)) == ["beta"]
