"""Settings, the backend registry and the rate limiter."""

from types import SimpleNamespace

import pytest

from assist.config import (
    DEFAULT_OFFLINE_THRESHOLD,
    VERIFIER_OFFLINE_THRESHOLD,
    BackendConfig,
    ConfigError,
    backend_config,
)
from assist.llm.base import RateLimiter, ThrottledBackend
from assist.llm.bedrock import BedrockBackend
from assist.llm.offline import OfflineSimilarityBackend
from assist.llm.openai_compatible import OpenAICompatibleBackend
from assist.llm.registry import build_backend, clear_backends, get_backend, get_voter_backends

from .conftest import chat_reply


@pytest.fixture(autouse=True)
def fresh_registry():
    clear_backends()
    yield
    clear_backends()


def test_defaults_run_on_a_laptop():
    config = backend_config(SimpleNamespace())
    assert config.llm_backend == "offline"
    assert config.embedding_model == ""
    assert (config.llm_max_retries, config.llm_concurrency, config.llm_requests_per_minute) == (3, 4, 0)
    assert config.offline_verifier is True
    assert config.offline_threshold == VERIFIER_OFFLINE_THRESHOLD == 0.4
    assert config.llm_voter_backends == ()


def test_settings_are_read_and_coerced():
    source = SimpleNamespace(
        FINEGRAIN_LLM_BACKEND="openai",
        FINEGRAIN_LLM_TIMEOUT="12.5",
        FINEGRAIN_LLM_MAX_RETRIES="5",
        FINEGRAIN_LLM_VOTER_BACKENDS="openai:gpt-4o, bedrock",
        FINEGRAIN_OPENAI_API_KEY="",  # Empty means "use the default".
        FINEGRAIN_OFFLINE_THRESHOLD=0.5,
    )
    config = backend_config(source)
    assert (config.llm_backend, config.llm_timeout, config.llm_max_retries) == ("openai", 12.5, 5)
    assert config.llm_voter_backends == ("openai:gpt-4o", "bedrock")
    assert config.offline_threshold == 0.5
    assert backend_config(SimpleNamespace(FINEGRAIN_LLM_VOTER_BACKENDS=["a", " b "])).llm_voter_backends == ("a", "b")


def test_bad_values_are_refused():
    with pytest.raises(ConfigError, match="FINEGRAIN_LLM_MAX_RETRIES"):
        backend_config(SimpleNamespace(FINEGRAIN_LLM_MAX_RETRIES="many"))
    with pytest.raises(ConfigError, match="FINEGRAIN_LLM_CONCURRENCY"):
        backend_config(SimpleNamespace(FINEGRAIN_LLM_CONCURRENCY=0))
    with pytest.raises(ConfigError, match="Unknown assist setting"):
        backend_config(SimpleNamespace(), llm_colour="red")


def test_django_settings_are_read_when_configured():
    from django.conf import settings
    from django.test import override_settings

    if not settings.configured:
        pytest.skip("Django settings are not configured in this run")
    with override_settings(FINEGRAIN_LLM_BACKEND="bedrock", FINEGRAIN_BEDROCK_REGION="eu-central-1"):
        config = backend_config()
    assert (config.llm_backend, config.bedrock_region) == ("bedrock", "eu-central-1")


def test_the_environment_is_read_without_django(monkeypatch):
    monkeypatch.setattr("assist.config._django_settings", lambda: None)  # As in a script without Django.
    monkeypatch.setenv("FINEGRAIN_LLM_CONCURRENCY", "9")
    assert backend_config().llm_concurrency == 9


def test_the_registry_builds_each_kind():
    config = BackendConfig(
        openai_base_url="http://127.0.0.1:9/v1", openai_model="gpt-x", bedrock_model_id="amazon.nova-lite-v1:0"
    )
    assert isinstance(build_backend("openai", config), OpenAICompatibleBackend)
    bedrock = build_backend("bedrock", config)
    assert isinstance(bedrock, BedrockBackend) and bedrock.model == "amazon.nova-lite-v1:0"
    offline = build_backend("offline", config)
    assert isinstance(offline, OfflineSimilarityBackend) and offline.threshold == VERIFIER_OFFLINE_THRESHOLD
    assert offline.verifier is not None
    checks = build_backend("offline", BackendConfig(offline_verifier=False))
    assert checks.verifier is None and checks.threshold == DEFAULT_OFFLINE_THRESHOLD


def test_a_name_may_carry_its_model():
    config = BackendConfig(openai_model="default-model")
    assert build_backend("openai:llama3.1:8b", config).model == "llama3.1:8b"
    assert build_backend("bedrock:anthropic.claude-3-haiku-20240307-v1:0", config).model == (
        "anthropic.claude-3-haiku-20240307-v1:0"
    )


def test_missing_models_and_unknown_backends_are_configuration_errors():
    with pytest.raises(ConfigError, match="FINEGRAIN_BEDROCK_MODEL_ID"):
        build_backend("bedrock", BackendConfig())
    with pytest.raises(ConfigError, match="FINEGRAIN_OPENAI_MODEL"):
        build_backend("openai", BackendConfig(openai_model=""))
    with pytest.raises(ConfigError, match="Unknown LLM backend 'gemini'"):
        build_backend("gemini", BackendConfig())


def test_backends_are_shared_per_process():
    config = BackendConfig(llm_backend="openai", openai_model="m")
    assert get_backend(config=config) is get_backend("openai", config)
    assert get_backend("openai:other", config) is not get_backend(config=config)


def test_voters_come_from_settings():
    config = BackendConfig(openai_model="m", llm_voter_backends=("openai:a", "openai:b"))
    assert [voter.model for voter in get_voter_backends(config)] == ["a", "b"]
    with pytest.raises(ConfigError, match="cannot include 'offline'"):
        get_voter_backends(BackendConfig(llm_voter_backends=("offline",)))


def test_a_requests_per_minute_budget_throttles_the_backend(chat_server):
    config = BackendConfig(openai_base_url=chat_server.base_url, openai_model="m", llm_requests_per_minute=600)
    backend = get_backend("openai", config)
    assert isinstance(backend, ThrottledBackend)
    chat_server.add(chat_reply("one"), chat_reply("two"))
    waits = []
    backend.limiter._sleep = waits.append

    texts = [backend.complete([{"role": "user", "content": "x"}], max_tokens=5, temperature=0).text for _ in "ab"]

    assert texts == ["one", "two"]
    assert len(waits) == 1 and 0 < waits[0] <= 0.1  # 600 a minute: one every 0.1 s.


def test_the_rate_limiter_spaces_requests_evenly():
    now = [100.0]
    waits = []
    limiter = RateLimiter(30, clock=lambda: now[0], sleep=waits.append)  # One every 2 s.

    assert [limiter.acquire() for _ in range(3)] == [0.0, 2.0, 4.0]
    now[0] = 110.0  # Idle for a while: no debt, no burst beyond the next slot.
    assert limiter.acquire() == 0.0
    assert RateLimiter(0).acquire() == 0.0
