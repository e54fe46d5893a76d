"""Build backends from settings.

FINEGRAIN_LLM_BACKEND names the pre-labeling and key-fact backend: "offline" (the default, no network), "openai"
(any OpenAI-compatible server) or "bedrock". A name may carry its own model after a colon, "openai:gpt-4o" or
"bedrock:anthropic.claude-3-haiku-20240307-v1:0", which is how FINEGRAIN_LLM_VOTER_BACKENDS lists several models
on one service (paper B.3 votes with three other LLMs). Backends are kept per process, so HTTP connections and the
requests-per-minute budget are shared by all the threads of a worker.
"""

import threading

from assist.config import BackendConfig, ConfigError, backend_config

from .base import ChatBackend, RateLimiter, ThrottledBackend

KINDS = ("offline", "openai", "bedrock")

_backends: dict[tuple[str, BackendConfig], ChatBackend] = {}
_lock = threading.Lock()


def split_name(name: str) -> tuple[str, str]:
    """("openai", "gpt-4o") from "openai:gpt-4o"; the model part may itself contain colons (Bedrock ids do)."""
    kind, _, model = name.strip().partition(":")
    kind = kind.strip().lower()
    if kind not in KINDS:
        raise ConfigError(f"Unknown LLM backend {name!r}: expected one of {', '.join(KINDS)}, optionally ':model'")
    return kind, model.strip()


def build_backend(name: str, config: BackendConfig) -> ChatBackend:
    """A new backend instance (no cache, no throttling); tests and get_backend use it."""
    kind, model = split_name(name)
    if kind == "offline":
        from . import offline_verifier
        from .offline import OfflineSimilarityBackend

        return OfflineSimilarityBackend(threshold=config.offline_threshold, model_path=config.embedding_model or None,
                                        verifier=offline_verifier.shared() if config.offline_verifier else None)
    if kind == "openai":
        from .openai_compatible import OpenAICompatibleBackend

        model = model or config.openai_model
        if not model:
            raise ConfigError("FINEGRAIN_OPENAI_MODEL is empty: name the model the OpenAI-compatible server serves")
        return OpenAICompatibleBackend(
            base_url=config.openai_base_url,
            model=model,
            api_key=config.openai_api_key,
            timeout=config.llm_timeout,
        )
    from .bedrock import BedrockBackend

    model = model or config.bedrock_model_id
    if not model:
        raise ConfigError("FINEGRAIN_BEDROCK_MODEL_ID is empty: name the Bedrock model (or inference profile) to call")
    return BedrockBackend(model_id=model, region=config.bedrock_region, timeout=config.llm_timeout)


def get_backend(name: str | None = None, config: BackendConfig | None = None) -> ChatBackend:
    """The process-wide backend for `name` (default FINEGRAIN_LLM_BACKEND), throttled as configured."""
    config = config or backend_config()
    name = (name or config.llm_backend).strip()
    key = (name, config)
    with _lock:
        backend = _backends.get(key)
        if backend is None:
            backend = build_backend(name, config)
            if config.llm_requests_per_minute and split_name(name)[0] != "offline":
                backend = ThrottledBackend(backend, RateLimiter(config.llm_requests_per_minute))
            _backends[key] = backend
    return backend


def get_voter_backends(config: BackendConfig | None = None) -> list[ChatBackend]:
    """The extra LLMs that vote on key-fact candidates (FINEGRAIN_LLM_VOTER_BACKENDS)."""
    config = config or backend_config()
    voters = []
    for name in config.llm_voter_backends:
        if split_name(name)[0] == "offline":
            raise ConfigError("FINEGRAIN_LLM_VOTER_BACKENDS cannot include 'offline': it has no LLM to vote with")
        voters.append(get_backend(name, config))
    return voters


def clear_backends() -> None:
    """Close and forget the cached backends (tests; a worker after settings change)."""
    with _lock:
        for backend in _backends.values():
            backend.close()
        _backends.clear()
