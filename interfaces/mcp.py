"""The MCP tools' kit: a tool's declaration (``ToolSpec``), the annotations the tools share, and
one registry. Each app declares its tools in its own ``mcp`` module and registers them
(``register``), and may register resources (``register_resources``: memories' records); the one
``/mcp`` server (``interfaces.mcp_server``) serves ``registered()`` and ``registered_resources()``,
which find every app's ``mcp`` module as the admin finds ``admin`` modules, in the order of
``INSTALLED_APPS``. So no app imports another app's tools, and the server imports none."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.utils.module_loading import autodiscover_modules
from mcp_types import Resource, ResourceLink, ResourceTemplate, ToolAnnotations

from accounts.keys import Principal
from memories import inputs

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
    linked: Callable[[Mapping[str, Any]], list[ResourceLink]] | None = (
        None  # what the answer links (resource_link blocks)
    )
    scope: str | None = None  # the scope it needs, when not memory:read / memory:write by its annotations


READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# A write that adds (a record, a ledger entry): repeating it adds again.
APPEND = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# A write that forgets: repeating it changes nothing more.
ERASE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


@dataclass(frozen=True)
class Listing:
    """One page of an app's resources, and the cursor of the next (None: the last)."""

    resources: list[Resource]
    next_cursor: str | None


@dataclass(frozen=True)
class Resources:
    """An app's resources: URIs starting with ``prefix`` (described by ``template``), listed a page
    at a time and read as the caller; a domain error (``NotFound``…) says why not."""

    prefix: str
    template: ResourceTemplate
    mime_type: str
    list_page: Callable[[Principal, str | None], Listing]
    read: Callable[[Principal, str], str]


_REGISTRY: dict[str, tuple[ToolSpec, ...]] = {}
_RESOURCES: dict[str, Resources] = {}
_DISCOVERED: list[bool] = []  # every app's mcp module imported (once: a failed import per app is not free)


def register(app_label: str, *specs: ToolSpec) -> None:
    """An app's tools (its ``mcp`` module calls this once, when imported)."""
    _REGISTRY[app_label] = specs


def register_resources(app_label: str, resources: Resources) -> None:
    """An app's resources (its ``mcp`` package registers them once, when imported)."""
    _RESOURCES[app_label] = resources


def _discover() -> None:
    if not _DISCOVERED:
        autodiscover_modules("mcp")
        _DISCOVERED.append(True)


def registered() -> tuple[ToolSpec, ...]:
    """Every app's tools, in the order of ``INSTALLED_APPS`` (each app's in its own order)."""
    _discover()
    return tuple(spec for config in apps.get_app_configs() for spec in _REGISTRY.get(config.label, ()))


def registered_resources() -> tuple[Resources, ...]:
    """Every app's resources, in the order of ``INSTALLED_APPS`` (today memories' records only)."""
    _discover()
    return tuple(_RESOURCES[config.label] for config in apps.get_app_configs() if config.label in _RESOURCES)
