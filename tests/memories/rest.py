"""A small JSON client over Django's test client, authenticated with a raw API key."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client


class Api:
    def __init__(self, key: str) -> None:
        self.key = key
        self.client = Client()

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        all_headers = {"Authorization": f"Bearer {self.key}", **(headers or {})}
        kwargs: dict[str, Any] = {"headers": all_headers}
        if body is not None:
            kwargs["data"] = json.dumps(body)
            kwargs["content_type"] = "application/json"
        response = getattr(self.client, method.lower())(f"/api/v1{path}", **kwargs)
        return response.status_code, (response.json() if response.content else None)

    def remember(self, headers: dict[str, str] | None = None, **body: Any) -> tuple[int, Any]:
        return self.call("POST", "/memories", body, headers)

    def ok_remember(self, **body: Any) -> dict[str, Any]:
        status, answer = self.remember(**body)
        assert status == 201, answer
        return dict(answer)

    def search(self, **body: Any) -> dict[str, Any]:
        status, answer = self.call("POST", "/memories/search", body)
        assert status == 200, answer
        return dict(answer)

    def forget(self, **body: Any) -> tuple[int, Any]:
        return self.call("POST", "/memories/forget", body)
