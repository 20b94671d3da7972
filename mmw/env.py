"""Typed readers for settings taken from the environment.

Each helper fails loudly (``ImproperlyConfigured``) on a value it cannot parse, so a typo in a
deployment never silently falls back to a default.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str:
    """Return the variable, or ``default``; with no default a missing variable is an error."""
    value = os.environ.get(name)
    if value is None:
        if default is None:
            raise ImproperlyConfigured(f"environment variable {name} is required")
        return default
    return value


def env_bool(name: str, default: bool) -> bool:
    """Parse 1/0, true/false, yes/no, on/off (any case)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    lowered = raw.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    """Parse an integer, optionally bounded below."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be >= {minimum}, got {value}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    """Parse a finite decimal number (e.g. seconds), optionally bounded below."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name} must be finite, got {raw!r}")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be >= {minimum}, got {value}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    """Parse a comma-separated list; blanks are dropped."""
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def env_networks(name: str, default: list[str]) -> tuple[Network, ...]:
    """Parse a comma-separated list of addresses or CIDR networks (``10.0.0.0/8``, ``::1``); an
    address is its own one-address network. A network with host bits set (``10.0.0.1/8``) is an
    error, not silently widened or narrowed."""
    networks: list[Network] = []
    for item in env_list(name, default):
        try:
            networks.append(ipaddress.ip_network(item, strict=True))
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: {item!r} is not an IP address or CIDR network ({exc})") from None
    return tuple(networks)


def env_path(name: str, default: Path) -> Path:
    """Return an absolute path (relative values are taken from the current directory)."""
    raw = os.environ.get(name)
    path = Path(raw) if raw else default
    return path.expanduser().resolve()


def read_secret(name: str, fallback_file: Path) -> str:
    """Return the variable, else the stripped contents of ``fallback_file``; neither is an error."""
    value = os.environ.get(name, "").strip()
    if value:
        return value
    if fallback_file.is_file():
        content = fallback_file.read_text().strip()
        if content:
            return content
    raise ImproperlyConfigured(f"set {name} (or create {fallback_file}, as `make run` does)")
