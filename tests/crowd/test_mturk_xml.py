"""The XML sent to MTurk validates against the published schemas (tests/fixtures/mturk, see SOURCE.md)."""

from pathlib import Path

import pytest
from lxml import etree

from annotation.crowd import mturk_xml

SCHEMAS = Path(__file__).resolve().parent.parent / "fixtures" / "mturk"


def schema(name: str) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(SCHEMAS / name)))


def parse(text: str):
    return etree.fromstring(text.encode())


def test_the_external_question_is_valid():
    xml = mturk_xml.external_question("https://finegrain.example.org/crowd/mturk/x/?a=1&b=2", 0)
    schema("ExternalQuestion.xsd").assertValid(parse(xml))
    assert "&amp;b=2" in xml  # the URL is escaped, not pasted


def test_an_external_question_needs_https():
    with pytest.raises(ValueError):
        mturk_xml.external_question("http://finegrain.example.org/", 0)
    forged = ('<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/'
              'ExternalQuestion.xsd"><ExternalURL>http://x.org/</ExternalURL><FrameHeight>0</FrameHeight>'
              '</ExternalQuestion>')
    assert not schema("ExternalQuestion.xsd").validate(parse(forged))


def test_the_qualification_test_is_a_valid_question_form_with_ten_questions():
    test = mturk_xml.load_qualification_test()
    root = parse(mturk_xml.question_form(test))
    schema("QuestionForm.xsd").assertValid(root)
    ns = {"q": mturk_xml.QUESTION_FORM_NS}
    assert len(root.findall("q:Question", ns)) == 10


def test_the_answer_key_is_valid_and_passing_means_every_answer_right():
    test = mturk_xml.load_qualification_test()
    root = parse(mturk_xml.answer_key(test))
    schema("AnswerKey.xsd").assertValid(root)
    ns = {"a": mturk_xml.ANSWER_KEY_NS}
    scores = [int(x.text) for x in root.findall("a:Question/a:AnswerOption/a:AnswerScore", ns)]
    maximum = int(root.find("a:QualificationValueMapping/a:PercentageMapping/a:MaximumSummedScore", ns).text)
    assert len(scores) == 10 and sum(scores) == maximum  # 100% only with all ten right
    answers = {q.find("a:QuestionIdentifier", ns).text: q.find("a:AnswerOption/a:SelectionIdentifier", ns).text
               for q in root.findall("a:Question", ns)}
    assert answers == {question["id"]: question["answer"] for question in test["questions"]}
