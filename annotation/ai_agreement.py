"""Whether an annotator agrees with the AI judgment shown on a fact-verification item (paper B.2).

The AI's judgment is binary once its category is read as "no error" or "an error" (its category names which error),
and so is the annotator's own answer: the AI is right exactly when both say the sentence has an error, or both say
it has none. "Is the AI right?" and "does the sentence have an error?" are therefore one decision, never two: either
answer gives the other (`derive`), and a pair that says both ("the AI is right" about an AI "no error" plus "has an
error") contradicts itself (`contradiction`). The HIT page, the API, the grading of attention checks and the
screening test's key all ask these two functions, so the rule is written once. Below the services: it knows the AI's
categories and nothing else.
"""

from assist.models import Category


def ai_says_error(ai_category: str) -> bool | None:
    """The AI judgment as a yes/no to "has an error?"; None when no judgment was made."""
    if not ai_category:
        return None
    return ai_category != Category.NO_ERROR


def ai_right_for(ai_category: str, has_error: bool | None) -> bool | None:
    """Whether the AI is right, given the annotator's own answer (None when either is missing)."""
    says_error = ai_says_error(ai_category)
    if says_error is None or has_error is None:
        return None
    return has_error == says_error


def has_error_for(ai_category: str, ai_right: bool | None) -> bool | None:
    """The annotator's own answer, given whether they find the AI right (None when either is missing)."""
    says_error = ai_says_error(ai_category)
    if says_error is None or ai_right is None:
        return None
    return says_error if ai_right else not says_error


def contradiction(ai_category: str, *, has_error: bool | None, ai_right: bool | None) -> str | None:
    """Why the pair cannot both be meant, in the annotator's words; None when it is consistent (or incomplete)."""
    expected = ai_right_for(ai_category, has_error)
    if expected is None or expected == ai_right:
        return None
    ai = "an error" if ai_says_error(ai_category) else "no error"
    own = "has an error" if has_error else "has no error"
    return (f"The AI judged {ai} and you answered that the sentence {own}, so the AI is "
            f"{'right' if expected else 'wrong'}; you also answered that it is {'right' if ai_right else 'wrong'}.")


def derive(ai_category: str, *, has_error: bool | None, ai_right: bool | None) -> tuple[bool | None, bool | None]:
    """The pair with a missing half filled in from the other (`has_error`, `ai_right`); a contradictory pair is
    returned as it is (ask `contradiction` first)."""
    if has_error is None:
        has_error = has_error_for(ai_category, ai_right)
    if ai_right is None:
        ai_right = ai_right_for(ai_category, has_error)
    return has_error, ai_right
