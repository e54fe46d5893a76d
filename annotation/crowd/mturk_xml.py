"""The XML MTurk reads: ExternalQuestion (the HIT), QuestionForm + AnswerKey (the qualification test, paper G.1).

Built with lxml so text is always escaped; tests validate each document against the published XSD schemas
(tests/fixtures/mturk/).
"""

from lxml import etree

SCHEMAS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas"
EXTERNAL_QUESTION_NS = f"{SCHEMAS}/2006-07-14/ExternalQuestion.xsd"
QUESTION_FORM_NS = f"{SCHEMAS}/2005-10-01/QuestionForm.xsd"
ANSWER_KEY_NS = f"{SCHEMAS}/2005-10-01/AnswerKey.xsd"

TEST_TITLE = "Summary annotation: comprehension test"
TEST_OVERVIEW = ("Ten questions about the task rules. Only workers who answer every question right may work on "
                 "these HITs (paper G.1).")


def load_qualification_test() -> dict:
    """The 10-question test of annotation/quality/qualification.py, in the shape the builders below read:
    {"title", "overview", "questions": [{"id", "text", "options": [(id, text)], "answer": id, "score": n}]}."""
    from annotation.quality.qualification import mturk_questions  # noqa: PLC0415

    return {"title": TEST_TITLE, "overview": TEST_OVERVIEW, "questions": [
        {"id": item["identifier"], "text": item["text"], "answer": item["answer"], "score": item["score"],
         "options": [(option["identifier"], option["text"]) for option in item["options"]]}
        for item in mturk_questions()]}


def _tostring(root) -> str:
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8").decode()


def external_question(url: str, frame_height: int) -> str:
    if not url.startswith("https://"):
        raise ValueError("MTurk shows an ExternalQuestion only from an HTTPS URL")
    root = etree.Element(f"{{{EXTERNAL_QUESTION_NS}}}ExternalQuestion", nsmap={None: EXTERNAL_QUESTION_NS})
    etree.SubElement(root, f"{{{EXTERNAL_QUESTION_NS}}}ExternalURL").text = url
    etree.SubElement(root, f"{{{EXTERNAL_QUESTION_NS}}}FrameHeight").text = str(frame_height)
    return _tostring(root)


def question_form(test: dict) -> str:
    ns = QUESTION_FORM_NS

    def sub(parent, name, text=None):
        element = etree.SubElement(parent, f"{{{ns}}}{name}")
        if text is not None:
            element.text = text
        return element

    root = etree.Element(f"{{{ns}}}QuestionForm", nsmap={None: ns})
    overview = sub(root, "Overview")
    sub(overview, "Title", test["title"])
    sub(overview, "Text", test["overview"])
    for question in test["questions"]:
        node = sub(root, "Question")
        sub(node, "QuestionIdentifier", question["id"])
        sub(node, "IsRequired", "true")
        sub(sub(node, "QuestionContent"), "Text", question["text"])
        selection = sub(sub(node, "AnswerSpecification"), "SelectionAnswer")
        sub(selection, "StyleSuggestion", "radiobutton")
        selections = sub(selection, "Selections")
        for option_id, text in question["options"]:
            option = sub(selections, "Selection")
            sub(option, "SelectionIdentifier", option_id)
            sub(option, "Text", text)
    return _tostring(root)


def answer_key(test: dict) -> str:
    """Each right answer scores its points; the qualification value is the percentage of the maximum, so the
    HITs' requirement "EqualTo 100" admits only workers who got every answer right."""
    ns = ANSWER_KEY_NS

    def sub(parent, name, text=None):
        element = etree.SubElement(parent, f"{{{ns}}}{name}")
        if text is not None:
            element.text = text
        return element

    root = etree.Element(f"{{{ns}}}AnswerKey", nsmap={None: ns})
    for question in test["questions"]:
        node = sub(root, "Question")
        sub(node, "QuestionIdentifier", question["id"])
        option = sub(node, "AnswerOption")
        sub(option, "SelectionIdentifier", question["answer"])
        sub(option, "AnswerScore", str(question.get("score", 1)))
        sub(node, "DefaultScore", "0")
    mapping = sub(sub(root, "QualificationValueMapping"), "PercentageMapping")
    sub(mapping, "MaximumSummedScore", str(sum(question.get("score", 1) for question in test["questions"])))
    return _tostring(root)
