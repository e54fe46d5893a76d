"""Typed readers for settings that come from the environment (healthchecks' envbool/envint style)."""

import os
from decimal import Decimal, InvalidOperation


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be a boolean (true/false), got {value!r}")


def envint(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def envfloat(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {value!r}") from None


def envdecimal(name: str, default: Decimal) -> Decimal:
    """A money amount: exact and finite (a NaN cannot be compared with a wage, an infinite floor cannot be met)."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"{name} must be a decimal number, got {value!r}") from None
    if not number.is_finite():
        raise ValueError(f"{name} must be a finite decimal number, got {value!r}")
    return number


def envlist(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]
