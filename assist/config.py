"""Settings for the AI assistance, read in one place.

The assist modules are plain Python so that tests, scripts and Celery workers can use them without a configured
Django. `backend_config()` reads `django.conf.settings` lazily when Django is configured, the environment otherwise.
`BackendConfig`'s field defaults are the only place the defaults are written (they run on one laptop: the offline
labeler, the bundled embedding model); config/settings.py reads each variable with them.
"""

import os
from dataclasses import dataclass, fields
from typing import Any

# Chosen with the other offline thresholds on the tuning sets: see assist/llm/offline.py and benchmarks/RESULTS.md.
DEFAULT_OFFLINE_THRESHOLD = 0.55
# With the verifier on, the similarity threshold only catches sentences no source sentence retells.
VERIFIER_OFFLINE_THRESHOLD = 0.4


class ConfigError(Exception):
    """A setting is missing or has a value the assist modules cannot use."""


@dataclass(frozen=True)
class BackendConfig:
    llm_backend: str = "offline"
    openai_base_url: str = "https://api.openai.com/v1"
    openai_api_key: str = ""
    openai_model: str = "gpt-4o-mini"
    bedrock_model_id: str = ""
    bedrock_region: str = "us-east-1"
    llm_timeout: float = 60.0
    llm_max_retries: int = 3
    llm_concurrency: int = 4
    llm_requests_per_minute: int = 0
    llm_voter_backends: tuple[str, ...] = ()
    embedding_model: str = ""
    # None: the threshold that goes with the labeler's mode (offline_threshold_for).
    offline_threshold: float | None = None
    # On by default: with it the offline labeler scored 0.726 on the fourth blind set against 0.604 for the checks
    # alone (benchmarks/RESULTS.md); off, the checks alone run, a third faster.
    offline_verifier: bool = True

    def __post_init__(self) -> None:
        if self.llm_timeout <= 0:
            raise ConfigError(f"FINEGRAIN_LLM_TIMEOUT must be positive, got {self.llm_timeout}")
        if self.llm_max_retries < 0:
            raise ConfigError(f"FINEGRAIN_LLM_MAX_RETRIES must be 0 or more, got {self.llm_max_retries}")
        if self.llm_concurrency < 1:
            raise ConfigError(f"FINEGRAIN_LLM_CONCURRENCY must be 1 or more, got {self.llm_concurrency}")
        if self.llm_requests_per_minute < 0:
            raise ConfigError(
                f"FINEGRAIN_LLM_REQUESTS_PER_MINUTE must be 0 (unlimited) or more, got {self.llm_requests_per_minute}"
            )
        if self.offline_threshold is None:
            object.__setattr__(self, "offline_threshold", offline_threshold_for(self.offline_verifier))
        if not -1.0 <= self.offline_threshold <= 1.0:
            raise ConfigError(
                f"FINEGRAIN_OFFLINE_THRESHOLD is a cosine similarity in [-1, 1], got {self.offline_threshold}"
            )


def offline_threshold_for(verifier: bool) -> float:
    """The similarity threshold the offline labeler's thresholds were chosen with, with or without the verifier."""
    return VERIFIER_OFFLINE_THRESHOLD if verifier else DEFAULT_OFFLINE_THRESHOLD


# The defaults, for settings.py and for the backends' own keyword defaults.
DEFAULTS = BackendConfig()


def setting_name(field_name: str) -> str:
    return "FINEGRAIN_" + field_name.upper()


def _coerce(name: str, value: Any, default: Any) -> Any:
    """Settings may arrive as strings (environment) or native values (settings.py); accept both."""
    try:
        if isinstance(default, tuple):
            if isinstance(value, str):
                return tuple(item.strip() for item in value.split(",") if item.strip())
            return tuple(str(item).strip() for item in value if str(item).strip())
        if isinstance(default, bool):
            return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        return "" if value is None else str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} has an unusable value {value!r}") from None


def _django_settings() -> Any | None:
    """Django's settings when a settings module is in use, else None (plain scripts and Django-free tests)."""
    try:
        from django.conf import settings
    except ImportError:  # pragma: no cover - Django is a dependency, but these modules do not need it.
        return None
    if settings.configured or os.environ.get("DJANGO_SETTINGS_MODULE"):
        return settings
    return None


def backend_config(source: Any = None, **overrides: Any) -> BackendConfig:
    """Build the config from `source` (an object with FINEGRAIN_* attributes), Django settings or the environment.

    Missing or empty values take the defaults; keyword overrides use the field names (`llm_timeout=5`).
    """
    if source is None:
        source = _django_settings()
    values = {}
    for field in fields(BackendConfig):
        name = setting_name(field.name)
        if field.name in overrides:
            raw = overrides[field.name]
        elif source is not None:
            raw = getattr(source, name, None)
        else:
            raw = os.environ.get(name)
        if raw is None or raw == "":
            continue
        # A field whose default is None (worked out from the others) is read as a number.
        values[field.name] = _coerce(name, raw, 0.0 if field.default is None else field.default)
    unknown = set(overrides) - {field.name for field in fields(BackendConfig)}
    if unknown:
        raise ConfigError(f"Unknown assist setting(s): {', '.join(sorted(unknown))}")
    return BackendConfig(**values)
