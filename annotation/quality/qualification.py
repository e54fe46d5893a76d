"""The screening test (paper G.1; BRIEF step 8): ten comprehension questions about the task rules, passed at 100%.

The questions are data: the crowd provider code turns `mturk_questions()` into an MTurk QuestionForm and AnswerKey;
the in-app screening page (annotation/views/quality.py) shows them to link and Prolific annotators. Passing records
`Annotator.qualified_at`. Which annotators must pass is `Project.qualification_required` ("crowd" by default: every
annotator except in-house accounts, who are trained in person).
"""

from dataclasses import dataclass

from django.utils import timezone

from ..models import Annotator, Project


@dataclass(frozen=True)
class Question:
    key: str
    text: str
    options: tuple[tuple[str, str], ...]  # (option key, option text)
    answer: str  # The option key that is right.


QUESTIONS: tuple[Question, ...] = (
    Question("q1", "In fact verification, what may you use to decide whether a summary sentence is correct?", (
        ("a", "Only the source text shown on the page."),
        ("b", "The source text and what you know about the topic from elsewhere."),
        ("c", "Whatever the AI judgment says."),
    ), "a"),
    Question("q2", "The source says the museum reopened in May. The summary says it reopened in June. "
                   "Which error is this?", (
        ("a", "No error: the month is a small detail."),
        ("b", "An entity error: a name, number, date or place is wrong."),
        ("c", "An out-of-article error."),
    ), "b"),
    Question("q3", "The source says the council approved the plan. The summary says the council rejected the plan. "
                   "Which error is this?", (
        ("a", "An entity error."),
        ("b", "A relation error: the entities are right but what links them is wrong."),
        ("c", "No error."),
    ), "b"),
    Question("q4", "A summary sentence adds a claim that appears nowhere in the source, even though it may be true "
                   "in the real world. What do you answer?", (
        ("a", "No error, because the claim is true."),
        ("b", "It has an error: an out-of-article error."),
        ("c", "Skip the sentence."),
    ), "b"),
    Question("q5", "The AI judgment says \"no error\", but you find that the sentence gets a number wrong. "
                   "What do you do?", (
        ("a", "Agree with the AI, since it read the whole text."),
        ("b", "Answer that the AI is wrong, that the sentence has an error, and tick the entity error type."),
        ("c", "Answer that the AI is right but tick an error type."),
    ), "b"),
    Question("q6", "What are the highlighted source sentences?", (
        ("a", "The only sentences you are allowed to read."),
        ("b", "Sentences a program found similar to the item: a hint where to look first; the evidence may be "
              "elsewhere in the text."),
        ("c", "Sentences the summary must repeat word for word."),
    ), "b"),
    Question("q7", "In key-fact validation, when is a key-fact useful?", (
        ("a", "When it is important for a good summary, correct, and supported by the source."),
        ("b", "Whenever it is grammatically correct."),
        ("c", "When it mentions at least three people or places."),
    ), "a"),
    Question("q8", "A key-fact is correct but is a minor side detail of the document (for example the colour of a "
                   "car in a story about an election). Is it useful?", (
        ("a", "Yes, every correct fact is useful."),
        ("b", "No: a good summary would not need it."),
    ), "b"),
    Question("q9", "In key-fact alignment, the key-fact is \"The hotel has free parking\" and the summary sentence is "
                   "\"Guests can park at the hotel at no cost.\" Can the key-fact be inferred from the sentence?", (
        ("a", "Yes: the sentence says the same thing in other words."),
        ("b", "No: the words are different."),
    ), "a"),
    Question("q10", "The key-fact is \"The team won the final 3-1 in Madrid\" and the sentence is \"The team won the "
                    "final.\" Can the key-fact be inferred from the sentence?", (
        ("a", "Yes: most of it is there."),
        ("b", "No: the score and the place are missing, so the whole key-fact cannot be inferred."),
    ), "b"),
)
PASS_SHARE = 1.0  # Paper G.1: only workers who score 100.


def mturk_questions() -> list[dict]:
    """The test as plain data for an MTurk QuestionForm/AnswerKey: each correct answer scores 10, pass at 100."""
    return [{"identifier": q.key, "text": q.text,
             "options": [{"identifier": key, "text": text} for key, text in q.options],
             "answer": q.answer, "score": 100 // len(QUESTIONS)} for q in QUESTIONS]


@dataclass(frozen=True)
class ScreeningResult:
    correct: int
    total: int

    @property
    def passed(self) -> bool:
        return self.correct >= PASS_SHARE * self.total


class InvalidScreening(Exception):
    status_code = 400


def score_answers(answers: dict[str, str]) -> ScreeningResult:
    """Score a complete set of answers; InvalidScreening when one is missing or names no option."""
    problems = []
    for question in QUESTIONS:
        given = answers.get(question.key, "")
        if given not in {key for key, _ in question.options}:
            problems.append(f"Question {question.key[1:]}: {'choose one answer' if not given else 'no such answer'}.")
    if problems:
        raise InvalidScreening(" ".join(problems))
    correct = sum(1 for question in QUESTIONS if answers[question.key] == question.answer)
    return ScreeningResult(correct=correct, total=len(QUESTIONS))


def record_screening(*, annotator: Annotator, answers: dict[str, str]) -> ScreeningResult:
    """Score the test and, when it is passed, record when (a later failed attempt does not take that back)."""
    result = score_answers(answers)
    if result.passed and annotator.qualified_at is None:
        annotator.qualified_at = timezone.now()
        Annotator.objects.filter(pk=annotator.pk).update(qualified_at=annotator.qualified_at)
    return result


def requires_qualification(annotator: Annotator, project: Project) -> bool:
    rule = project.qualification_required
    if rule == Project.Qualification.ALL:
        return True
    return rule == Project.Qualification.CROWD and annotator.provider != Annotator.Provider.ACCOUNT


def reservation_refusal(annotator: Annotator, project: Project) -> str | None:
    """Why `annotator` may not reserve a new HIT of `project` (None: they may). Reads the stored status, so a
    pause or block decided a moment ago applies at once."""
    status, qualified_at = Annotator.objects.filter(pk=annotator.pk).values_list("status", "qualified_at").get()
    if status != Annotator.Status.ACTIVE:
        return f"Your annotator account is {Annotator.Status(status).label.lower()}; no new HITs can be reserved."
    if requires_qualification(annotator, project) and qualified_at is None:
        return "Pass the short screening test first (My work → Screening test); then HITs open for you."
    return None
