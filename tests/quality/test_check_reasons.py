"""With an LLM backend, the reason shown with an FV attention check's platform-set AI judgment is worded by that
LLM, as the real units' reasons are (paper G.3: checks look exactly like real items); the templates stand in only
when the backend fails. Tested against a real chat-completions server on loopback."""

import json

import pytest

from annotation.models import AttentionCheck, Unit
from annotation.quality.disguise import backend_reasons
from annotation.services.hits import build_hits
from assist.llm.registry import clear_backends
from assist.parsing import ParseError, parse_reason
from tests.assist.conftest import Reply, chat_reply, chat_server  # noqa: F401 (chat_server is a fixture)
from tests.quality.conftest import with_checks
from tests.quality.leaks import assert_api_hides_checks, assert_hit_page_hides_checks
from tests.work import add_assistance, import_small

pytestmark = pytest.mark.django_db
Kind = AttentionCheck.Kind


@pytest.fixture
def llm(settings, chat_server):
    settings.FINEGRAIN_LLM_BACKEND = "openai"
    settings.FINEGRAIN_OPENAI_BASE_URL = chat_server.base_url
    settings.FINEGRAIN_OPENAI_MODEL = "served-model"
    settings.FINEGRAIN_LLM_MAX_RETRIES = 0
    clear_backends()
    yield chat_server
    clear_backends()


def sentence_of(prompt: str) -> str:
    return prompt.rsplit("Summary sentence: ", 1)[1].strip()


def llm_project(project):
    import_small(project)
    add_assistance(project, backend="openai")  # the real units' reasons come from the same backend
    with_checks(project)
    return project


def fv_checks(project):
    return list(Unit.objects.filter(hit__project=project, task="fv", attention_check__isnull=False)
                .select_related("attention_check", "hit__document"))


def test_the_llm_words_the_reason_of_each_check(project, llm):
    def answer(request):
        prompt = request.json["messages"][-1]["content"]
        return chat_reply(json.dumps({"reason": f"S2 covers this: {sentence_of(prompt)[:20]}."}))

    llm.responder = answer
    build_hits(llm_project(project), "fv")
    checks = fv_checks(project)
    assert checks
    assert len(llm.requests) == len(checks)  # one request per check, none for real units
    prompts = [r.json["messages"][-1]["content"] for r in llm.requests]
    for unit in checks:
        said = "no error" if unit.attention_check.kind == Kind.FV_AI_SAYS_CORRECT else "out-of-article error"
        # The check's sentence and verdict, against its own document numbered as the fact-check prompt numbers it.
        first = unit.hit.document.sentences.order_by("index").first().text
        assert any(sentence_of(prompt) == " ".join(unit.text.split())
                   and f'The sentence below was given the category "{said}"' in prompt
                   and f"[S1] {' '.join(first.split())}" in prompt for prompt in prompts), unit.pk
        assert unit.ai_reason == f"S2 covers this: {' '.join(unit.text.split())[:20]}."
        assert unit.ai_category == ("no_error" if said == "no error" else "out_of_article")
        assert "threshold" not in unit.ai_reason
        real = unit.hit.units.filter(attention_check__isnull=True).first()
        assert unit.ai_source == real.ai_source == "openai · all-MiniLM-L6-v2"
    assert all(r.json["model"] == "served-model" for r in llm.requests)
    # The answers are cached: disguising the same checks again asks nothing.
    before = len(llm.requests)
    from annotation.quality.disguise import DocumentVectors

    vectors = DocumentVectors()
    again = backend_reasons(vectors, [(u.hit.document, u.text, u.ai_category) for u in checks])
    assert again == [u.ai_reason for u in checks] and len(llm.requests) == before


def test_pages_and_api_still_do_not_tell_llm_worded_checks_apart(project, llm, annotator, client):
    llm.responder = lambda request: chat_reply(json.dumps({"reason": "S1 states the same thing."}))
    build_hits(llm_project(project), "fv")
    assert {u.ai_reason for u in fv_checks(project)} == {"S1 states the same thing."}
    assert_hit_page_hides_checks(project, annotator, client, "fv")
    assert_api_hides_checks(project, annotator, client, "fv")


def test_a_failing_backend_falls_back_to_the_templates(project, llm):
    llm.responder = lambda request: Reply(status=400, body={"error": {"message": "model not found"}})
    build_hits(llm_project(project), "fv")
    checks = fv_checks(project)
    assert checks and len(llm.requests) == len(checks)
    for unit in checks:
        assert unit.ai_reason and "Offline" not in unit.ai_reason
        if unit.attention_check.kind == Kind.FV_AI_SAYS_CORRECT:
            assert "document" in unit.ai_reason or "source" in unit.ai_reason


def test_the_offline_backend_asks_nobody_and_keeps_its_own_style(project, settings, llm):
    settings.FINEGRAIN_LLM_BACKEND = "offline"
    import_small(project)
    add_assistance(project)
    with_checks(project)
    build_hits(project, "fv")
    checks = fv_checks(project)
    assert checks and not llm.requests
    assert all(u.ai_reason.startswith("Offline labeler (not an LLM): ") for u in checks)


def test_the_reason_parser_takes_json_or_one_plain_line():
    assert parse_reason('```json\n{"reason": "  S3 says   so. "}\n```') == "S3 says so."
    assert parse_reason("S4 states the same figure.") == "S4 states the same figure."
    assert parse_reason('{"explanation": "S1 names the city."}') == "S1 names the city."
    for bad in ("", '{"reason": ""}', "line one\nline two", json.dumps({"reason": "x" * 401})):
        with pytest.raises(ParseError):
            parse_reason(bad)
