"""An annotator works through one HIT of each task with the keyboard only, in Debian's Chromium.

Also: a reload keeps the answers; redaction placeholders and markup inside a document are shown as text and no
script in a text runs; screenshots of the three HIT pages and the manager's progress page go to screenshots/.
"""

import json

import pytest

from annotation.models import Assignment, Label
from annotation.services.hits import build_hits
from assist.models import ContextualMapping, PreLabel
from corpus.importing import import_dataset
from corpus.models import KeyFact, Membership, Project
from tests.work import may_create_projects

from .conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCUMENT = (
    "The Riverside community library reopened on Monday after an eight-month renovation. "
    "The work cost 1.4 million dollars, most of it paid by a state grant. "
    "Head librarian Ana Ruiz said the building now has a children's wing and a room for teenagers. "
    "Opening hours are extended to 9 p.m. on weekdays. "
    "Visitors can book study rooms by calling <PHONENUMBER_1> or at the front desk. "
    "A sign at the entrance read <script>window.__pwned = 1</script> during the opening. "
    "A second sign said <img src=x onerror=\"window.__pwned = 2\"> in large letters. "
    "The library expects 500 visitors a day, twice as many as before."
)
ROW = {
    "uid": "lib-1", "doc_id": "lib-1", "source": "TestNews", "domain": "news", "input_type": "non-dialogue",
    "redact_type": "redacted", "document": DOCUMENT, "model": "model-a",
    "summary": ("The Riverside library reopened after a renovation that cost 1.4 million dollars. "
                "It now closes at 10 p.m. on weekdays. "
                "Study rooms are booked by calling <PHONENUMBER_1>."),
    "pred_keyfact": ["The library reopened after a renovation.", "The library has a new swimming pool."],
}
HIGHLIGHTS = {0: [0, 1], 1: [3], 2: [4]}
AI = {0: ("no_error", "The reopening and the cost are both stated."),
      1: ("no_error", "The sentence matches the opening hours."),
      2: ("no_error", "The phone number placeholder is in the source.")}


@pytest.fixture
def work(django_user_model):
    # No attention checks: this test knows every item of every HIT (the checks have their own browser test).
    project = Project.objects.create(slug="lib", name="Library study", annotators_per_unit=1, attention_check_rate=0)
    import_dataset(project=project, data=json.dumps(ROW).encode(), filename="lib.jsonl")
    document = project.documents.get()
    for sentence in document.summaries.get().sentences.all():
        ContextualMapping.objects.create(summary_sentence=sentence, ranked=HIGHLIGHTS[sentence.index],
                                         scores=[0.9] * len(HIGHLIGHTS[sentence.index]),
                                         highlighted=HIGHLIGHTS[sentence.index], fraction=0.3,
                                         model_name="test", model_version="1")
        category, reason = AI[sentence.index]
        PreLabel.objects.create(summary_sentence=sentence, category=category, reason=reason, status="ok",
                                backend="offline-similarity", model="all-MiniLM-L6-v2", prompt_version="t")
    for fact, highlighted in zip(document.keyfacts.order_by("index"), ([0], [2])):
        ContextualMapping.objects.create(keyfact=fact, ranked=highlighted, scores=[0.8], highlighted=highlighted,
                                         fraction=0.3, model_name="test", model_version="1")
    for task in ("fv", "kv", "ka"):
        build_hits(project, task)
    users = {}
    for name, role in (("annie", Membership.Role.ANNOTATOR), ("manny", Membership.Role.MANAGER)):
        users[name] = django_user_model.objects.create_user(name, password=f"pw-{name}-123")
        if role == Membership.Role.MANAGER:
            may_create_projects(users[name])
        Membership.objects.create(project=project, user=users[name], role=role)
    return project


def log_in_by_keyboard(page, live_server, username):
    page.goto(f"{live_server.url}/accounts/login/")
    page.focus("input[name=username]")
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(f"pw-{username}-123")
    with page.expect_navigation():
        page.keyboard.press("Enter")


def start_next_fv_hit(page, live_server, username: str = "annie") -> None:
    """Log in by keyboard, start the next fact verification HIT from My work and wait for its first item."""
    log_in_by_keyboard(page, live_server, username)
    page.goto(f"{live_server.url}/work/")
    with page.expect_navigation():
        page.click("text=Start next fact verification HIT")
    page.wait_for_selector("#item-0.current")


def tab_to(page, text: str, limit: int = 40):
    """Press Tab until the focused element's text starts with `text`."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(document.activeElement.textContent || '').trim()").startswith(text):
            return
    raise AssertionError(f"No focusable element starts with {text!r}")


def saved(page, position: int):
    from playwright.sync_api import expect

    expect(page.locator(f"#state-{position}")).to_contain_text("Saved ✓", timeout=5000)


def read(page):
    """An annotator reads before answering: the page keeps time on an item to a tenth of a second, and a browser
    that answers within 50 ms of showing an item would record no time at all."""
    page.wait_for_timeout(150)


def press(page, *keys):
    for key in keys:
        page.keyboard.press(key)


def submit_by_keyboard(page):
    press(page, "Enter")
    page.wait_for_selector("#confirm-submit[open]")
    assert "items are answered" in page.inner_text("#confirm-text")
    with page.expect_navigation():
        press(page, "Enter")
    assert "HIT submitted. Thank you!" in page.inner_text("main")


@pytest.fixture
def watched(page):
    """The page, with every dialog and console error recorded (a CSP violation is a console error)."""
    events = {"dialogs": [], "errors": [], "failed": []}
    page.on("dialog", lambda dialog: (events["dialogs"].append(dialog.message), dialog.dismiss()))
    # Failed loads are checked by URL below; the browser's own favicon request is not the page's.
    page.on("console", lambda message: message.type == "error" and "Failed to load resource" not in message.text
            and events["errors"].append(message.text))
    page.on("pageerror", lambda error: events["errors"].append(str(error)))
    page.on("response", lambda response: response.status >= 400 and not response.url.endswith("/favicon.ico")
            and events["failed"].append(f"{response.status} {response.url}"))
    return page, events


def test_an_annotator_completes_one_hit_of_each_task_with_the_keyboard_only(watched, live_server, work, chromium):
    page, events = watched
    log_in_by_keyboard(page, live_server, "annie")
    assert page.url.endswith("/work/")

    # --- Fact verification: r/w (is the AI right), y/n (own label), 1-4 (types), j/k (move), Enter (submit).
    tab_to(page, "Start next fact verification HIT")
    with page.expect_navigation():
        press(page, "Enter")
    page.wait_for_selector("#item-0.current")
    assert page.locator(".sentence.hl").evaluate_all("els => els.map(e => e.id)") == ["s0", "s1"]
    read(page)
    press(page, "r", "n")
    saved(page, 0)
    press(page, "j")
    assert page.locator(".sentence.hl").evaluate_all("els => els.map(e => e.id)") == ["s3"]
    read(page)
    press(page, "w", "2")  # the AI is wrong; a relation error (choosing a type also answers "yes, an error")
    saved(page, 1)
    screenshot(page, "hit-fv.png")

    # A reload in the middle keeps every answer and lands on the first open item.
    page.reload()
    page.wait_for_selector("#item-2.current")
    assert page.is_checked("input[name=u0-ai_right][value=yes]") and page.is_checked(
        "input[name=u0-has_error][value=no]")
    assert page.is_checked("input[name=u1-has_error][value=yes]") and page.is_checked(
        "input[name=u1-error_types][value=relation]")
    press(page, "?")
    page.wait_for_selector("#instructions-dialog[open]")
    press(page, "Escape")
    page.wait_for_selector("#instructions-dialog:not([open])", state="attached")  # answer keys wait for it
    read(page)
    press(page, "r", "n")
    saved(page, 2)
    press(page, "k", "4")  # back to sentence 2: also out-of-article
    saved(page, 1)
    submit_by_keyboard(page)
    fv = Assignment.objects.get(hit__task="fv")
    assert fv.status == "submitted"
    labels = {label.unit.position: label for label in Label.objects.filter(assignment=fv)}
    assert (labels[0].ai_right, labels[0].has_error) == (True, False)
    assert (labels[1].ai_right, labels[1].has_error, labels[1].error_types) == (
        False, True, ["relation", "out_of_article"])
    assert all(label.seconds_on_item > 0 for label in labels.values())

    # --- Key-fact validation: y/n answer and move on.
    tab_to(page, "Start next key-fact validation HIT")
    with page.expect_navigation():
        press(page, "Enter")
    page.wait_for_selector("#item-0.current")
    press(page, "y")
    page.wait_for_selector("#item-1.current")
    assert page.locator(".sentence.hl").evaluate_all("els => els.map(e => e.id)") == ["s2"]
    press(page, "n")
    saved(page, 0)
    saved(page, 1)
    screenshot(page, "hit-kv.png")
    submit_by_keyboard(page)
    # With one annotator per unit, that submission settled the key-facts and made the KA HIT.
    assert list(KeyFact.objects.order_by("index").values_list("status", flat=True)) == ["accepted", "rejected"]

    # --- Key-fact alignment: the accepted key-fact against each of the 3 summary sentences.
    tab_to(page, "Start next key-fact alignment HIT")
    with page.expect_navigation():
        press(page, "Enter")
    page.wait_for_selector("#item-0.current")
    press(page, "y", "n", "n")
    for position in range(3):
        saved(page, position)
    screenshot(page, "hit-ka.png")
    submit_by_keyboard(page)
    ka = Assignment.objects.get(hit__task="ka")
    assert ka.status == "submitted"
    assert [label.aligned for label in ka.labels.order_by("unit__position")] == [True, False, False]

    assert events == {"dialogs": [], "errors": [], "failed": []}

    # --- The manager's progress page: everything done.
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    manager_page = context.new_page()
    log_in_by_keyboard(manager_page, live_server, "manny")
    manager_page.goto(f"{live_server.url}/projects/lib/progress/")
    assert "1 / 1" in manager_page.inner_text("#progress")
    screenshot(manager_page, "progress.png")
    context.close()


def test_placeholders_and_markup_in_a_document_are_shown_as_text(watched, live_server, work):
    page, events = watched
    log_in_by_keyboard(page, live_server, "annie")
    tab_to(page, "Start next fact verification HIT")
    with page.expect_navigation():
        press(page, "Enter")
    page.wait_for_selector("#item-0.current")
    source = page.inner_text("#source")
    assert "calling <PHONENUMBER_1> or at the front desk" in source
    assert "read <script>window.__pwned = 1</script> during" in source
    assert 'said <img src=x onerror="window.__pwned = 2"> in large' in source
    assert "Study rooms are booked by calling <PHONENUMBER_1>." in page.inner_text("#answers")
    assert page.locator("#source script, #source img, #source phonenumber_1").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert events == {"dialogs": [], "errors": [], "failed": []}


def test_a_10000_word_document_moves_highlights_without_rerendering(watched, live_server, django_user_model):
    import random

    from annotation.services.assignment import reserve_next_hit
    from corpus.models import SummarySentence
    from tests.work import annotator_for, import_generated

    project = import_generated(Project.objects.create(slug="long", name="Long"), documents=1, summarizers=1,
                               sentences=8, words_per_sentence=20, document_sentences=500)
    document = project.documents.get()
    assert document.word_count == 10_000
    rng = random.Random(3)
    for sentence in SummarySentence.objects.filter(summary__document=document):
        highlighted = sorted(rng.sample(range(500), 150))  # the paper's 30%
        ContextualMapping.objects.create(summary_sentence=sentence, ranked=highlighted, scores=[0.5] * 150,
                                         highlighted=highlighted, fraction=0.3, model_name="t", model_version="1")
    build_hits(project, "fv")
    user = django_user_model.objects.create_user("longreader", password="pw-longreader-123")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    assignment = reserve_next_hit(annotator_for(user), project, "fv", confirmed=True)
    page, events = watched
    log_in_by_keyboard(page, live_server, "longreader")
    page.goto(f"{live_server.url}/work/hits/{assignment.public_id}/")
    page.wait_for_selector("#item-0.current")
    assert page.locator("#source .sentence").count() == 500
    assert page.locator(".sentence.hl").count() == 150
    # Moving through all 8 items: each move swaps 150 highlights and scrolls the source; the source is never
    # rendered again (a marker set on its first sentence survives). How long a move takes is a number for a
    # benchmark, not for a test: it depends on the machine.
    page.evaluate("""() => {
        document.getElementById("s0").dataset.probe = "kept";
        for (let i = 0; i < 7; i++) {
            document.dispatchEvent(new KeyboardEvent("keydown", {key: "j", bubbles: true}));
        }
    }""")
    assert page.locator("#item-7.current").count() == 1
    assert page.get_attribute("#s0", "data-probe") == "kept"
    expected = page.get_attribute("#item-7", "data-highlight").split()
    assert page.locator(".sentence.hl").evaluate_all("els => els.map(e => e.id.slice(1))") == expected
    assert events == {"dialogs": [], "errors": [], "failed": []}


def test_the_page_submits_without_javascript(chromium, live_server, work):
    context = chromium.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        log_in_by_keyboard(page, live_server, "annie")
        with page.expect_navigation():
            page.click("text=Start next fact verification HIT")
        # The error types appear (pure CSS) once "yes, an error" is chosen.
        assert not page.is_visible("#item-1 .types")
        # The AI said "no error" everywhere: the error on sentence 2 makes it wrong there (the server refuses a pair
        # that says both).
        for position in range(3):
            page.check(f"input[name=u{position}-ai_right][value={'no' if position == 1 else 'yes'}]")
            page.check(f"input[name=u{position}-has_error][value={'yes' if position == 1 else 'no'}]")
        assert page.is_visible("#item-1 .types")
        # A first submit without the error type is refused with the list of what is missing.
        with page.expect_navigation():
            page.click("#submit-hit")
        assert "Sentence 2: which error types?" in page.inner_text("#missing-answers")
        page.check("input[name=u1-error_types][value=entity]")
        with page.expect_navigation():
            page.click("#submit-hit")
        assert "HIT submitted. Thank you!" in page.inner_text("main")
    finally:
        context.close()
    fv = Assignment.objects.get(hit__task="fv")
    assert fv.status == "submitted"
    assert [(label.has_error, label.error_types) for label in fv.labels.order_by("unit__position")] == [
        (False, []), (True, ["entity"]), (False, [])]


def test_a_manager_sets_a_hits_assistance_and_the_annotator_sees_that_level(watched, live_server, work):
    page, events = watched
    log_in_by_keyboard(page, live_server, "manny")
    page.goto(f"{live_server.url}/projects/lib/hits/?task=fv")
    with page.expect_navigation():
        page.click("table.grid a")
    page.select_option("select[name=assistance]", "highlights")
    with page.expect_navigation():
        page.click("form.card button[type=submit]")
    assert "Assistance saved" in page.inner_text("body")
    assert page.input_value("select[name=assistance]") == "highlights"
    screenshot(page, "hit-detail-assistance.png")
    page.goto(f"{live_server.url}/projects/lib/hits/")
    assert "Highlights only" in page.inner_text("table.grid")
    screenshot(page, "hit-list-ablation.png")

    # The annotator now sees the highlights but neither the AI's judgment nor the question about it.
    page.context.clear_cookies()  # Log out.
    log_in_by_keyboard(page, live_server, "annie")
    tab_to(page, "Start next fact verification HIT")
    with page.expect_navigation():
        press(page, "Enter")
    page.wait_for_selector("#item-0.current")
    assert page.locator(".ai-judgment").count() == 0
    assert page.locator("[name=u0-ai_right]").count() == 0
    assert page.locator("#source .hl").count() > 0
    assert events == {"dialogs": [], "errors": [], "failed": []}
