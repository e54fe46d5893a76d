"""The pages speak the user's words, in Debian's Chromium.

- A manager of an in-house project sees who is behind each pseudonym on the review page and the annotators page,
  with a link to People; a crowd project's pages show the pseudonym alone.
- An annotator reads the AI's reason in plain words (no cosine similarity), and a highlighted sentence's rank reads
  as an ordinal, not as a sentence number.
- Every action on the manager's project page has a line saying what it is for.
Screenshots go to /tmp/shots (FINEGRAIN_SHOTS) and screenshots/.
"""

import json
import os
import re

import pytest
from playwright.sync_api import expect

from annotation.services.assignment import reserve_next_hit
from annotation.services.hits import build_hits
from assist.llm.offline import OfflineSimilarityBackend
from assist.models import ContextualMapping, PreLabel
from corpus.importing import import_dataset
from corpus.models import Membership, Project
from tests.conftest import numbers_now
from tests.work import annotator_for, complete, crowd_annotator, import_generated, may_create_projects

from .conftest import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("FINEGRAIN_SHOTS", "/tmp/shots")


def shot(page, name: str) -> None:
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, name), full_page=True)
    screenshot(page, name)


def manager_of(project, django_user_model, username="mona"):
    user = may_create_projects(django_user_model.objects.create_user(username, password=f"{username}-pass-123"))
    Membership.objects.create(project=project, user=user, role=Membership.Role.MANAGER)
    return user


def disagreeing(project, first, second):
    """`first` says every sentence is right, `second` that every one has an error: each item is on review."""
    build_hits(project, "fv")
    complete(reserve_next_hit(first, project, "fv", confirmed=True), yes=True)
    complete(reserve_next_hit(second, project, "fv", confirmed=True), yes=False)


def test_a_manager_of_an_in_house_study_sees_who_is_behind_each_pseudonym_and_a_crowd_study_shows_none(
        page, live_server, django_user_model):
    inhouse = import_generated(Project.objects.create(slug="inhouse", name="In-house study"), documents=1,
                               summarizers=1, sentences=1)
    ines, omar = (django_user_model.objects.create_user(name) for name in ("ines", "omar"))
    for user in (ines, omar):
        Membership.objects.create(project=inhouse, user=user, role=Membership.Role.ANNOTATOR)
    disagreeing(inhouse, annotator_for(ines), annotator_for(omar))
    crowd = import_generated(Project.objects.create(slug="crowd", name="Crowd study"), documents=1, summarizers=1,
                             sentences=1)
    workers = crowd_annotator("worker-4411", crowd), crowd_annotator("worker-9023", crowd)
    disagreeing(crowd, *workers)
    manager = manager_of(inhouse, django_user_model)
    Membership.objects.create(project=crowd, user=manager, role=Membership.Role.MANAGER)
    for project in (inhouse, crowd):  # the lists a reviewer asked for
        numbers_now(project, "review_tally")
    log_in(page, live_server, "mona", "mona-pass-123")

    page.goto(f"{live_server.url}/projects/inhouse/review/")
    card = page.locator(".review-unit").first
    for user in (ines, omar):
        pseudonym = annotator_for(user).pseudonym
        row = card.locator("tr", has=page.locator(f"code:text-is('{pseudonym}')"))
        expect(row.locator("a.person")).to_have_text(user.username)
        expect(row.locator("a.person")).to_have_attribute("href", f"/projects/inhouse/people/#person-{user.pk}")
    shot(page, "review-person-and-pseudonym.png")

    page.goto(f"{live_server.url}/projects/inhouse/")
    expect(page.locator("#annotators-link + .action-why")).to_contain_text("the person's name")
    page.click("#annotators-link")
    row = page.locator("tr", has=page.locator(f"code:text-is('{annotator_for(ines).pseudonym}')"))
    expect(row.locator("a.person")).to_have_text("ines")
    shot(page, "annotators-person-and-pseudonym.png")
    with page.expect_navigation():
        row.locator("a.person").click()
    assert page.url.endswith(f"/projects/inhouse/people/#person-{ines.pk}")
    expect(page.locator(f"#person-{ines.pk}")).to_contain_text("ines")

    # A crowd study: the pseudonyms, and nobody's name or platform id.
    for url in ("/projects/crowd/review/", "/projects/crowd/annotators/"):
        page.goto(f"{live_server.url}{url}")
        main = page.locator("main")
        for worker in workers:
            expect(main).to_contain_text(worker.pseudonym)
            expect(main).not_to_contain_text(worker.external_id)
        expect(page.locator(".person")).to_have_count(0)
        if "review" in url:
            shot(page, "review-crowd-pseudonyms-only.png")


# A made-up town's new pool, written for this test; the summary's second sentence says the opposite of the sixth.
POOL = [
    "The town of Ellesby opened its new swimming pool on Saturday, 3 May.",
    "The pool cost £5.2 million, paid for by the town council and a lottery grant.",
    "It has eight lanes, a diving board and a learners' pool for children.",
    "Manager Priya Haldane said 1,200 people had already bought season tickets.",
    "The old pool closed in 2019 because its roof was unsafe.",
    "Entry prices are expected to fall next year as more people join.",
]
SUMMARY = ["Manager Priya Haldane said 1,200 people had bought season tickets.",
           "Entry prices are expected to rise next year as more people join."]
# Highlighted source sentences of each summary sentence, closest first, as the labeler ranks them.
RANKED = {0: [3, 5, 1], 1: [5, 3]}


@pytest.fixture
def pool(django_user_model):
    project = Project.objects.create(slug="pool", name="Pool study", annotators_per_unit=1, attention_check_rate=0)
    row = {"uid": "pool-1", "doc_id": "pool-1", "source": "TestNews", "domain": "news",
           "input_type": "non-dialogue", "model": "model-a", "document": " ".join(POOL), "summary": " ".join(SUMMARY)}
    import_dataset(project=project, data=json.dumps(row).encode(), filename="pool.jsonl")
    document = project.documents.get()
    source = list(document.sentences.order_by("index").values_list("text", flat=True))
    assert source == POOL
    # The offline labeler's own judgments and reasons, cosine similarity included, as an assist run stores them.
    labeler = OfflineSimilarityBackend(model_path="")
    for sentence, judgement in zip(document.summaries.get().sentences.order_by("index"),
                                   labeler.label_summary(source, SUMMARY)):
        PreLabel.objects.create(summary_sentence=sentence, category=judgement.category, reason=judgement.reason,
                                status="ok", backend=labeler.name, model=labeler.model,
                                prompt_version=labeler.prompt_version)
        ranked = RANKED[sentence.index]
        ContextualMapping.objects.create(summary_sentence=sentence, ranked=ranked, scores=[0.9] * len(ranked),
                                         highlighted=sorted(ranked), fraction=0.3, model_name="test",
                                         model_version="1")
    build_hits(project, "fv")
    annie = django_user_model.objects.create_user("annie", password="annie-pass-123")
    Membership.objects.create(project=project, user=annie, role=Membership.Role.ANNOTATOR)
    manager_of(project, django_user_model)
    return project, reserve_next_hit(annotator_for(annie), project, "fv", confirmed=True)


def rank_badge(page, index: int) -> str:
    """What the rank marker of source sentence `index` shows ("none" when it has none); it checks that a screen
    reader hears the same rank with the word "closest"."""
    content = page.locator(f"#s{index}").evaluate("el => getComputedStyle(el, '::before').content")
    if content == "none":
        return content
    shown, spoken = content.split(" / ")
    assert "".join(re.findall(r'"([^"]*)"', spoken)) == f"{shown.strip(chr(34))} closest", content
    return shown.strip('"')


def test_an_annotator_reads_the_reason_in_words_and_ranks_as_ordinals(page, live_server, pool):
    project, assignment = pool
    stored = list(assignment.hit.units.order_by("position").values_list("ai_reason", flat=True))
    assert "cosine similarity" in stored[0] and "S4, S" in stored[0]  # What the labeler wrote.
    log_in(page, live_server, "annie", "annie-pass-123")
    page.goto(f"{live_server.url}/work/hits/{assignment.public_id}/")
    page.wait_for_selector("#item-0.current")

    first = page.locator("#item-0 .ai-judgment .reason")
    expect(first).to_have_text(re.compile(r"^Closest source sentences: 4, 6 and 2\. The document contains its "))
    expect(page.locator("#item-1 .ai-judgment .reason")).to_have_text(
        "It says 'rise' where the closest source sentence 6 says 'fall'.")
    text = page.locator("main").inner_text()
    assert not re.search(r"cosine|threshold|\d\.\d\d|\bS\d", text), text

    # Ranks: the closest source sentence (the 4th) is marked "1st", never a bare number beside its own "4".
    assert [rank_badge(page, i) for i in (3, 5, 1)] == ["1st", "2nd", "3rd"]
    expect(page.locator("#s3 sup")).to_have_text("4")
    shot(page, "annotator-ai-reason.png")
    page.keyboard.press("j")
    page.wait_for_selector("#item-1.current")
    assert [rank_badge(page, i) for i in (5, 3)] == ["1st", "2nd"]
    assert rank_badge(page, 1) == "none"

    # The manager's document page keeps the numbers the labeler computed.
    page.context.clear_cookies()
    log_in(page, live_server, "mona", "mona-pass-123")
    page.goto(f"{live_server.url}{project.documents.get().get_absolute_url()}")
    expect(page.locator("main")).to_contain_text("cosine similarity")


def test_every_action_on_the_project_page_says_what_it_is_for(page, live_server, pool):
    project, _ = pool
    log_in(page, live_server, "mona", "mona-pass-123")
    page.goto(f"{live_server.url}/projects/pool/")
    actions = page.locator("main a.button, main .action-list a, main button")
    assert actions.count() >= 13
    for i in range(actions.count()):
        action = actions.nth(i)
        why = action.evaluate("""el => {
            const holder = el.closest('li') || el.closest('form');
            let next = holder && holder.tagName === 'FORM' ? holder.nextElementSibling : el.nextElementSibling;
            return next && next.classList.contains('action-why') ? next.textContent.trim() : '';
        }""")
        assert len(why.split()) >= 6, f"{action.inner_text()!r} has no line saying what it is for"
    shot(page, "project-actions.png")
