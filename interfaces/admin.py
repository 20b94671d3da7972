"""The admin's kit: what every app's ``admin`` module shares."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


class ReadOnlyMixin:
    """Rows written only by services: staff may look, never add, change or delete."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
