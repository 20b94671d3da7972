"""The MCP tools' kit: a tool's declaration (``ToolSpec``), the annotations the tools share, and
one registry. Each app declares its tools in its own ``mcp`` module and registers them
(``register``); the one ``/mcp`` server (``memories.mcp``) serves ``registered()``, which finds
every app's ``mcp`` module as the admin finds ``admin`` modules, and lists the tools in the order
of ``INSTALLED_APPS``. So no app imports another app's tools."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.utils.module_loading import autodiscover_modules
from mcp_types import ToolAnnotations

from accounts.keys import Principal
from memories import inputs, presenters

# (principal, raw arguments, HTTP request headers) -> the answer
Operation = Callable[[Principal, Any, Mapping[str, str]], Mapping[str, object]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    params: tuple[inputs.Param, ...]
    description: str
    operation: Operation
    annotations: ToolAnnotations
    answer: Any  # the answer's TypedDict (or a union of them): the source of the outputSchema
    linked: Callable[[Mapping[str, Any]], list[presenters.Record]] | None = None  # records to link as resources
    scope: str | None = None  # the scope it needs, when not memory:read / memory:write by its annotations


READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# A write that adds (a record, a ledger entry): repeating it adds again.
APPEND = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# A write that forgets: repeating it changes nothing more.
ERASE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)

_REGISTRY: dict[str, tuple[ToolSpec, ...]] = {}
_DISCOVERED: list[bool] = []  # every app's mcp module imported (once: a failed import per app is not free)


def register(app_label: str, *specs: ToolSpec) -> None:
    """An app's tools (its ``mcp`` module calls this once, when imported)."""
    _REGISTRY[app_label] = specs


def registered() -> tuple[ToolSpec, ...]:
    """Every app's tools, in the order of ``INSTALLED_APPS`` (each app's in its own order)."""
    if not _DISCOVERED:
        autodiscover_modules("mcp")
        _DISCOVERED.append(True)
    return tuple(spec for config in apps.get_app_configs() for spec in _REGISTRY.get(config.label, ()))
