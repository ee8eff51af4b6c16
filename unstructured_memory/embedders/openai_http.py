"""Embeddings from an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

Works with OpenAI and with compatible services (DashScope ``text-embedding-v3``,
vLLM, Ollama, ...). Texts are sent in batches of ``batch_size``; 429, 5xx,
timeouts and connection errors are retried ``max_retries`` times with
exponential backoff and jitter, then raise ``EmbedderUnavailable``. An answer
with malformed JSON, the wrong number of vectors, bad indices or the wrong
dimension raises ``EmbedderError``; a rejected key raises ``ConfigurationError``.
Vectors are re-ordered by the response ``index`` and L2-normalised.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import httpx

from policies.errors import ConfigurationError
from unstructured_memory.embedders.base import ensure_texts
from unstructured_memory.embedders.registry import OpenAIEmbedderConfig
from unstructured_memory.errors import EmbedderError, EmbedderUnavailable

__all__ = ["OpenAIEmbedder", "OpenAIEmbedderConfig"]

_RETRY_STATUS = frozenset({408, 409, 429})


class OpenAIEmbedder:
    """HTTP embedder; owns an ``httpx.Client`` (close it, or use ``with``).

    The constructor does no I/O. ``dimensions`` is the configured one; when none
    is configured it is learned from the first answer (reading it before any
    embedding sends one probe request).
    """

    def __init__(self, config: OpenAIEmbedderConfig) -> None:
        self.config = config
        headers = {"Content-Type": "application/json"}
        if config.api_key is not None:
            headers["Authorization"] = f"Bearer {config.api_key.get_secret_value()}"
        self._url = config.base_url.rstrip("/") + "/embeddings"
        self._client = httpx.Client(headers=headers, timeout=config.timeout_s)
        self._dimensions = config.dimensions
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """``openai-<model>`` plus ``-<dimensions>`` when a dimension is configured."""
        suffix = f"-{self.config.dimensions}" if self.config.dimensions else ""
        return f"openai-{self.config.model}{suffix}"

    @property
    def dimensions(self) -> int:
        """Vector length; may send one probe request (see the class docstring)."""
        if self._dimensions is None:
            self._embed_batch(["dimension probe"])
        assert self._dimensions is not None
        return self._dimensions

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts`` in input order, ``batch_size`` texts per request."""
        ensure_texts(texts)
        size = self.config.batch_size
        out: list[list[float]] = []
        for start in range(0, len(texts), size):
            out.extend(self._embed_batch(list(texts[start : start + size])))
        return out

    def embed_query(self, text: str) -> list[float]:
        """The vector of one query text."""
        return self.embed_documents([text])[0]

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.config.model, "input": batch}
        if self.config.dimensions is not None:
            body["dimensions"] = self.config.dimensions
        return self._parse(self._post(body), len(batch))

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        cfg = self.config
        attempts = cfg.max_retries + 1
        for attempt in range(attempts):
            reason: str
            try:
                response = self._client.post(self._url, json=body)
            except httpx.TimeoutException:
                reason = f"timed out after {cfg.timeout_s}s"
            except httpx.TransportError as exc:
                reason = f"transport error {type(exc).__name__}"
            else:
                status = response.status_code
                if status < 400:
                    return response
                if status in (401, 403):
                    raise ConfigurationError(
                        f"embedding endpoint rejected the API key (HTTP {status})", status=status
                    )
                if status not in _RETRY_STATUS and status < 500:
                    raise EmbedderError(
                        f"embedding endpoint refused the request (HTTP {status})", status=status
                    )
                reason = f"HTTP {status}"
            if attempt + 1 < attempts:
                delay = min(cfg.backoff_max_s, cfg.backoff_s * 2.0**attempt)
                time.sleep(delay / 2.0 + random.uniform(0.0, delay / 2.0))
        raise EmbedderUnavailable(
            f"embedding endpoint unavailable after {attempts} attempts: {reason}",
            attempts=attempts,
        )

    def _parse(self, response: httpx.Response, expected: int) -> list[list[float]]:
        try:
            payload = response.json()
            data = payload["data"]
            items = sorted(
                ((int(item["index"]), item["embedding"]) for item in data),
                key=lambda pair: pair[0],
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderError(f"malformed embeddings response: {type(exc).__name__}") from exc
        if [i for i, _ in items] != list(range(expected)):
            raise EmbedderError(
                f"expected {expected} embeddings indexed 0..{expected - 1}, got {len(items)}",
                expected=expected,
                got=len(items),
            )
        return [self._vector(raw) for _, raw in items]

    def _vector(self, raw: object) -> list[float]:
        if not isinstance(raw, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in raw
        ):
            raise EmbedderError("malformed embeddings response: embedding is not a number list")
        with self._lock:
            if self._dimensions is None:
                self._dimensions = len(raw)
        if len(raw) != self._dimensions:
            raise EmbedderError(
                f"embedding has dimension {len(raw)}, expected {self._dimensions}",
                expected=self._dimensions,
                got=len(raw),
            )
        norm = math.sqrt(math.fsum(float(x) * float(x) for x in raw))
        if norm == 0.0 or not math.isfinite(norm):
            raise EmbedderError("embedding has zero or non-finite norm")
        return [float(x) / norm for x in raw]
