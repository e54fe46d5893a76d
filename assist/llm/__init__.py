"""LLM backends behind one interface (assist.llm.base); build them from settings with `get_backend`.

Only the backend modules import an HTTP client or boto3, and only when that backend is built.
"""

from .base import (
    BackendError,
    ChatBackend,
    Completion,
    Message,
    NotSupported,
    PermanentError,
    RateLimited,
    SentenceLabeler,
    TransientError,
)
from .registry import get_backend, get_voter_backends

__all__ = [
    "BackendError",
    "ChatBackend",
    "Completion",
    "Message",
    "NotSupported",
    "PermanentError",
    "RateLimited",
    "SentenceLabeler",
    "TransientError",
    "get_backend",
    "get_voter_backends",
]
