"""Dialogues in each way their turns are written: UniSumEval's release (one line of "<p>USER : ...</p>" blocks),
DialogSum's "#Person1#: ..." and "NAME: ..." lines. Each turn keeps its speaker, no sentence carries markup or a
label, the stored text stays as given and every sentence is an exact span of it, in order."""

import json
import re

import pytest
from django.urls import reverse

from annotation.services.assignment import reserve_next_hit, return_assignment
from annotation.services.hits import build_hits
from corpus.importing import import_dataset
from corpus.models import Document
from corpus.segmentation import is_release_format, segment_document, split_turns
from tests.work import annotator_for, without_attention_checks

RELEASE = ("<p>USER : I need a room at <PLACE_1> for two nights.</p> <p>SYSTEM : Sure. It costs 80 pounds a night. "
           "Shall I book it?</p> <p>USER : Yes, please. My number is <PHONENUMBER_1>.</p> <p>SYSTEM : Done, your "
           "reference is <CODE_1>.</p>")
DIALOGSUM_ONE_LINE = ("#Person1#: Good morning, Mr. Lee. How was the trip? #Person2#: Long, but fine. The train was "
                      "late. #Person1#: I'm glad you made it.")
DIALOGSUM_LINES = "#Person1#: Can I help you?\n#Person2#: Yes. I'm looking for a blue scarf.\nA wool one, if possible."
NAME_LINES = "Dr. Ana Ruiz: Welcome back. How is the knee?\nPATIENT: Better. I walk without a stick now."

EXPECTED = {
    "release": [("USER", "I need a room at <PLACE_1> for two nights."), ("SYSTEM", "Sure."),
                ("SYSTEM", "It costs 80 pounds a night."), ("SYSTEM", "Shall I book it?"), ("USER", "Yes, please."),
                ("USER", "My number is <PHONENUMBER_1>."), ("SYSTEM", "Done, your reference is <CODE_1>.")],
    "dialogsum_one_line": [("#Person1#", "Good morning, Mr. Lee."), ("#Person1#", "How was the trip?"),
                           ("#Person2#", "Long, but fine."), ("#Person2#", "The train was late."),
                           ("#Person1#", "I'm glad you made it.")],
    "dialogsum_lines": [("#Person1#", "Can I help you?"), ("#Person2#", "Yes."),
                        ("#Person2#", "I'm looking for a blue scarf."), ("#Person2#", "A wool one, if possible.")],
    "name_lines": [("Dr. Ana Ruiz", "Welcome back."), ("Dr. Ana Ruiz", "How is the knee?"), ("PATIENT", "Better."),
                   ("PATIENT", "I walk without a stick now.")],
}
TEXTS = {"release": RELEASE, "dialogsum_one_line": DIALOGSUM_ONE_LINE, "dialogsum_lines": DIALOGSUM_LINES,
         "name_lines": NAME_LINES}
TURNS = {"release": [0, 1, 1, 1, 2, 2, 3], "dialogsum_one_line": [0, 0, 1, 1, 2], "dialogsum_lines": [0, 1, 1, 1],
         "name_lines": [0, 0, 1, 1]}


def spans_in_order(text: str, sentences: list[str]) -> bool:
    """Every sentence is found in `text` after the one before it: exact substrings, in the text's order."""
    position = 0
    for sentence in sentences:
        found = text.find(sentence, position)
        if found < 0:
            return False
        position = found + len(sentence)
    return True


def readable_words(text: str) -> list[str]:
    """The words a reader sees: the text without the release's <p> tags and without the speakers' labels."""
    text = re.sub(r"</?p>", " ", text)
    text = re.sub(r"#Person\d#:|^[A-Za-z][\w .]*?:(?= )|(?<=^)\s*[A-Z]+ :", " ", text, flags=re.M)
    return text.replace(" USER :", " ").replace(" SYSTEM :", " ").split()


@pytest.mark.parametrize("kind", list(TEXTS))
def test_each_format_gives_speakers_turns_and_exact_sentences(kind):
    text = TEXTS[kind]
    sentences = segment_document(text, dialogue=True)
    assert [(s.speaker, s.text) for s in sentences] == EXPECTED[kind]
    assert [s.index for s in sentences] == list(range(len(sentences)))
    assert [s.turn for s in sentences] == TURNS[kind]
    assert spans_in_order(text, [s.text for s in sentences])
    for sentence in sentences:
        assert "<p>" not in sentence.text and "</p>" not in sentence.text
        assert not sentence.text.startswith((sentence.speaker, ":")), sentence
    # No word of what was said is lost or doubled.
    assert " ".join(s.text for s in sentences).split() == readable_words(text)


def test_the_release_format_is_recognised_by_its_labelled_blocks_only():
    assert is_release_format(RELEASE) and is_release_format("  " + RELEASE + "\n")
    assert not is_release_format(NAME_LINES) and not is_release_format(DIALOGSUM_ONE_LINE)
    # A line-format dialogue that quotes markup keeps it as data (the demo's interview does so).
    quoted = "HOST: What do you type first?\nGUEST: Always <p>Welcome</p>. Then they open it."
    assert not is_release_format(quoted)
    assert split_turns(quoted) == [("HOST", "What do you type first?"),
                                   ("GUEST", "Always <p>Welcome</p>. Then they open it.")]
    assert not is_release_format("<p>Just a paragraph.</p> <p>Another one.</p>")


def test_release_text_outside_a_labelled_block_is_kept_as_a_turn_without_speaker():
    text = "<p>USER : Is it far?</p> (line noise) <p>It is not.</p> <p>SYSTEM : Ten minutes on foot.</p>"
    assert split_turns(text) == [("USER", "Is it far?"), ("", "(line noise)"), ("", "It is not."),
                                 ("SYSTEM", "Ten minutes on foot.")]
    assert split_turns("<p>USER : Hello.</p> <p>SYSTEM : </p> <p>USER : Anyone?</p>") == [
        ("USER", "Hello."), ("USER", "Anyone?")]  # a turn with nothing said is no turn


@pytest.fixture
def imported(project, django_user_model):
    without_attention_checks(project)
    rows = [{"uid": kind, "doc_id": kind, "source": "Test", "domain": "booking", "input_type": "dialogue",
             "document": text, "model": "m", "summary": "The customer asked for help. It was given."}
            for kind, text in TEXTS.items()]
    import_dataset(project=project, data="\n".join(json.dumps(row) for row in rows).encode(), filename="d.jsonl")
    return project


@pytest.mark.django_db
def test_the_import_stores_the_text_as_given_and_each_turns_speaker(imported):
    for kind, text in TEXTS.items():
        document = Document.objects.get(project=imported, uid=kind)
        assert document.text == text
        stored = list(document.sentences.order_by("index").values_list("index", "speaker", "text", "turn"))
        assert [(speaker, sentence) for _, speaker, sentence, _ in stored] == EXPECTED[kind]
        assert [index for index, *_ in stored] == list(range(len(EXPECTED[kind])))
        blocks = document.turns()
        assert [block["turn"] for block in blocks] == sorted(set(TURNS[kind]))
        assert all(block["speaker"] == block["sentences"][0].speaker for block in blocks)


@pytest.mark.django_db
def test_pages_show_speaker_labelled_blocks_without_the_markup(imported, client, manager, annotator):
    client.force_login(manager)
    page = client.get(Document.objects.get(project=imported, uid="release").get_absolute_url()).content.decode()
    source = page.split('<section class="card source">')[1].split("</section>")[0]
    assert "&lt;p&gt;" not in source and "USER :" not in source
    assert re.findall(r'<span class="speaker">([^<]*)</span>', source) == ["USER", "SYSTEM", "USER", "SYSTEM"]
    assert "&lt;PHONENUMBER_1&gt;" in source  # placeholders stay, as text

    build_hits(imported, "fv")
    client.force_login(annotator)
    seen = set()
    for _ in TEXTS:  # one FV HIT per document; returning each lets the next one come
        assignment = reserve_next_hit(annotator_for(annotator), imported, "fv", confirmed=True)
        kind = assignment.hit.document.uid
        seen.add(kind)
        html = client.get(reverse("hit_page", args=[assignment.public_id])).content.decode()
        source = html.split('id="source"')[1].split("</section>")[0]
        speakers = re.findall(r'<span class="speaker">([^<]*)</span>', source)
        first_of_each_turn = [speaker for number, (speaker, _) in enumerate(EXPECTED[kind])
                              if number == 0 or TURNS[kind][number] != TURNS[kind][number - 1]]
        assert speakers == first_of_each_turn, kind
        assert "&lt;p&gt;" not in source
        sentences = re.findall(r'<span class="sentence" id="s(\d+)">', source)
        assert sentences == [str(i) for i in range(len(EXPECTED[kind]))]
        return_assignment(assignment=assignment)
    assert seen == set(TEXTS)


def test_a_dialogues_word_count_counts_what_is_said_not_labels_or_markup():
    from corpus.importing import document_words

    release = "<p>USER : I need a train to Leeds.</p> <p>SYSTEM : Which day?</p>"
    assert document_words(release, dialogue=True) == 8
    assert document_words("#Person1#: Hello there. #Person2#: Hi!", dialogue=True) == 3
    assert document_words("Anna: Good morning all.\nBen: Morning.", dialogue=True) == 4
    assert document_words("Plain text of five words.", dialogue=False) == 5
