"""The LLM response cache in the database: identical requests are answered once, across workers and restarts."""

from typing import Any

from django.db import IntegrityError

from .models import LLMCacheEntry


class DatabaseCache:
    def get(self, key: str) -> dict[str, Any] | None:
        entry = LLMCacheEntry.objects.filter(key=key).only("response").first()
        return entry.response if entry else None

    def set(self, key: str, value: dict[str, Any]) -> None:
        try:
            LLMCacheEntry.objects.get_or_create(key=key, defaults={"response": value})
        except IntegrityError:
            pass  # another worker stored the same answer first
