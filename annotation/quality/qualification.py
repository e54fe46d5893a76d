"""The screening test (paper G.1): ten comprehension questions about the task rules, passed at 100%.

The questions are data: the crowd provider code turns `mturk_questions()` into an MTurk QuestionForm and AnswerKey;
the in-app screening page (annotation/views/quality.py) shows them to link and Prolific annotators. Which annotators
must pass is `Project.qualification_required` ("crowd" by default: every annotator except in-house accounts, who are
trained in person).

Per project, with a limited number of attempts (`Project.screening_attempts`, 3 by default), recorded on the
annotator's standing in the project (`ProjectAnnotator.qualified_at`, `screening_attempts`). A failed attempt is
told as failed, never with its score or which answers were wrong: ten multiple-choice questions retried without limit
and scored after each try are solved by trying, not by reading. After the last attempt the project's HITs stay closed.
MTurk workers take MTurk's own copy of the test (one request per worker: no RetryDelayInSeconds), before they can
accept a HIT; a submission MTurk confirms records that they passed (annotation/crowd/sync.py).
"""

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from corpus.models import Project

from ..ai_agreement import contradiction
from ..models import Annotator, ProjectAnnotator


@dataclass(frozen=True)
class Question:
    key: str
    text: str
    options: tuple[tuple[str, str], ...]  # (option key, option text)
    answer: str  # The option key that is right.


def answer_pair_question(key: str, text: str, *, ai_category: str, has_error: bool,
                         options: tuple[tuple[str, str, tuple[bool, bool]], ...]) -> Question:
    """A question whose options are answers on the HIT page, each a pair (has an error?, is the AI right?), about a
    sentence that has an error or not (`has_error`) under an AI judgment of `ai_category`. The right option is the
    one pair that is true and does not contradict itself by the rule the HIT page and the API apply
    (annotation.ai_agreement), so the test's key and the page never disagree on what may be answered."""
    right = [option for option, _, (error, ai_right) in options
             if error == has_error and contradiction(ai_category, has_error=error, ai_right=ai_right) is None]
    if len(right) != 1:
        raise ValueError(f"Question {key} needs exactly one right pair; {len(right)} are.")
    return Question(key, text, tuple((option, words) for option, words, _ in options), right[0])


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
    answer_pair_question(
        "q5", "The AI judgment says \"no error\", but you find that the sentence gets a number wrong. "
              "What do you do?", ai_category="no_error", has_error=True, options=(
            ("a", "Agree with the AI, since it read the whole text.", (False, True)),
            ("b", "Answer that the AI is wrong, that the sentence has an error, and tick the entity error type.",
             (True, False)),
            # Contradicts itself: the HIT page and the API refuse this pair.
            ("c", "Answer that the AI is right but tick an error type.", (True, True)),
        )),
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


class ScreeningClosed(Exception):
    """No attempt at the test is left; the message says so."""

    status_code = 403


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


@dataclass(frozen=True)
class ScreeningOutcome:
    """What the annotator may be told: passed or not, and the attempts left. Never the score."""

    passed: bool
    attempts_left: int


def attempts_left(standing: ProjectAnnotator, project: Project) -> int:
    return max(0, project.screening_attempts - standing.screening_attempts)


def closed_message(project: Project) -> str:
    return (f"You did not pass the screening test of {project.name} in {project.screening_attempts} attempt(s), so "
            "its HITs stay closed to you.")


@transaction.atomic
def screening_take(*, annotator: Annotator, project: Project, answers: dict[str, str]) -> ScreeningOutcome:
    """One attempt at `project`'s screening test. An incomplete form costs no attempt (InvalidScreening); one after
    the last raises ScreeningClosed. Passing records when; a later attempt is not needed and not taken."""
    standing = ProjectAnnotator.locked(annotator, project)
    if standing.qualified_at is not None:
        return ScreeningOutcome(passed=True, attempts_left=attempts_left(standing, project))
    if attempts_left(standing, project) == 0:
        raise ScreeningClosed(closed_message(project))
    result = score_answers(answers)
    standing.screening_attempts += 1
    if result.passed:
        standing.qualified_at = timezone.now()
    standing.save(update_fields=["screening_attempts", "qualified_at"])
    return ScreeningOutcome(passed=result.passed, attempts_left=attempts_left(standing, project))


def qualification_record(*, annotator: Annotator, project: Project) -> None:
    """Record that the annotator passed the test another way (MTurk's copy of it, confirmed by MTurk)."""
    ProjectAnnotator.objects.get_or_create(annotator=annotator, project=project)
    ProjectAnnotator.objects.filter(annotator=annotator, project=project, qualified_at__isnull=True).update(
        qualified_at=timezone.now())


def requires_qualification(annotator: Annotator, project: Project) -> bool:
    rule = project.qualification_required
    if rule == Project.Qualification.ALL:
        return True
    return rule == Project.Qualification.CROWD and annotator.provider != Annotator.Provider.ACCOUNT


def needs_screening(annotator: Annotator, project: Project) -> bool:
    """Whether the annotator should be sent to `project`'s screening test: may work there, must pass it, has not, and
    has an attempt left."""
    standing = annotator.standing_in(project)
    return (standing.may_work and requires_qualification(annotator, project) and standing.qualified_at is None
            and attempts_left(standing, project) > 0)


def reservation_refusal(annotator: Annotator, project: Project) -> str | None:
    """Why `annotator` may not reserve a HIT of `project` (None: they may). Reads the stored standing, so a pause or
    block decided a moment ago applies at once."""
    standing = annotator.standing_in(project)
    if not standing.may_work:
        return (f"Your annotator account is {Annotator.Status(standing.status).label.lower()} in {project.name}; "
                "no new HITs can be reserved.")
    if requires_qualification(annotator, project) and standing.qualified_at is None:
        if attempts_left(standing, project) == 0:
            return closed_message(project)
        return f"Pass the short screening test of {project.name} first (on My work); then HITs open for you."
    return None
