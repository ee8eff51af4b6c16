"""The OpenAI-compatible embedder against a small local server speaking the protocol.

The server (stdlib ``http.server`` on 127.0.0.1, port 0) answers
``POST /v1/embeddings`` and follows a per-test script of behaviours: ``ok``,
an HTTP status code, ``hang`` (answers after the client timeout) or
``wrong_dim``. Successful answers list the embeddings in reverse ``index``
order, so the client must re-order them.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from policies.errors import ConfigurationError
from unstructured_memory.embedders import create_embedder
from unstructured_memory.embedders.openai_http import OpenAIEmbedder, OpenAIEmbedderConfig
from unstructured_memory.errors import EmbedderError, EmbedderUnavailable

DIM = 4
HANG_S = 0.6


def fake_vector(text: str, dim: int = DIM) -> list[float]:
    """What the fake server embeds ``text`` to (not normalised)."""
    return [float(len(text)), float(ord(text[0])), 1.0, *([0.5] * (dim - 3))]


def normalised(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


@dataclass
class FakeServer:
    """State shared with the handler: the script and what was received."""

    url: str = ""
    script: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


def _handler(state: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: object) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            assert self.path == "/v1/embeddings"
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.headers.append(dict(self.headers))
            action = state.script.pop(0) if state.script else "ok"
            if action.isdigit():
                self._send(int(action), {"error": {"message": "nope", "type": "server"}})
                return
            if action == "hang":
                time.sleep(HANG_S)
            dim = body.get("dimensions", DIM) + (1 if action == "wrong_dim" else 0)
            data = [
                {"object": "embedding", "index": i, "embedding": fake_vector(text, dim)}
                for i, text in enumerate(body["input"])
            ]
            self._send(200, {"object": "list", "data": data[::-1], "model": body["model"]})

    return Handler


@pytest.fixture
def server() -> Iterator[FakeServer]:
    state = FakeServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    httpd.block_on_close = False
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield state
    httpd.shutdown()
    httpd.server_close()


def make(server: FakeServer, **overrides: Any) -> OpenAIEmbedder:
    settings: dict[str, Any] = {
        "base_url": server.url,
        "api_key": "sk-test",
        "model": "text-embedding-v3",
        "batch_size": 2,
        "timeout_s": 0.2,
        "max_retries": 2,
        "backoff_s": 0.01,
        **overrides,
    }
    embedder = create_embedder("openai", settings)
    assert isinstance(embedder, OpenAIEmbedder)
    return embedder


def test_batches_and_reorders_by_index(server: FakeServer) -> None:
    texts = ["退款", "到账了吗", "hello", "order 88231", "x"]
    with make(server) as embedder:
        vectors = embedder.embed_documents(texts)
    assert vectors == [normalised(fake_vector(t)) for t in texts]
    assert [r["input"] for r in server.requests] == [texts[0:2], texts[2:4], texts[4:5]]
    assert all("dimensions" not in r for r in server.requests)
    assert embedder.dimensions == DIM


def test_auth_header_model_and_dimensions_sent(server: FakeServer) -> None:
    with make(server, dimensions=8) as embedder:
        vector = embedder.embed_query("hi")
    assert len(vector) == 8
    assert server.headers[0]["Authorization"] == "Bearer sk-test"
    assert server.requests[0] == {"model": "text-embedding-v3", "input": ["hi"], "dimensions": 8}
    assert embedder.name == "openai-text-embedding-v3-8"


def test_500_then_success_is_retried(server: FakeServer) -> None:
    server.script[:] = ["500", "ok"]
    with make(server) as embedder:
        assert embedder.embed_query("hi") == normalised(fake_vector("hi"))
    assert len(server.requests) == 2


def test_persistent_503_is_unavailable(server: FakeServer) -> None:
    server.script[:] = ["503"] * 10
    with make(server) as embedder, pytest.raises(EmbedderUnavailable, match="HTTP 503"):
        embedder.embed_query("hi")
    assert len(server.requests) == 3


def test_hang_beyond_timeout_is_unavailable(server: FakeServer) -> None:
    server.script[:] = ["hang"] * 10
    with make(server, max_retries=1) as embedder, pytest.raises(EmbedderUnavailable, match="timed"):
        embedder.embed_query("hi")
    assert len(server.requests) == 2


def test_wrong_dimension_is_an_error(server: FakeServer) -> None:
    server.script[:] = ["wrong_dim"]
    with make(server, dimensions=6) as embedder, pytest.raises(EmbedderError, match="dimension 7"):
        embedder.embed_query("hi")


def test_dimension_change_between_batches_is_an_error(server: FakeServer) -> None:
    server.script[:] = ["ok", "wrong_dim"]
    with make(server) as embedder, pytest.raises(EmbedderError, match="dimension"):
        embedder.embed_documents(["a", "b", "c"])


def test_client_error_is_not_retried(server: FakeServer) -> None:
    server.script[:] = ["400"]
    with make(server) as embedder, pytest.raises(EmbedderError, match="HTTP 400"):
        embedder.embed_query("hi")
    assert len(server.requests) == 1


def test_rejected_key_is_a_configuration_error(server: FakeServer) -> None:
    server.script[:] = ["401"]
    with make(server) as embedder, pytest.raises(ConfigurationError, match="API key"):
        embedder.embed_query("hi")


def test_connection_refused_is_unavailable() -> None:
    config = OpenAIEmbedderConfig(
        base_url="http://127.0.0.1:9/v1", model="m", max_retries=1, backoff_s=0.0
    )
    with OpenAIEmbedder(config) as embedder, pytest.raises(EmbedderUnavailable):
        embedder.embed_query("hi")


def test_api_key_is_not_in_repr(server: FakeServer) -> None:
    with make(server) as embedder:
        assert "sk-test" not in repr(embedder.config)


def test_settings_dumps_hide_the_api_keys_the_embedder_still_sends(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdk.settings import Settings
    from unstructured_memory.profile.openai_chat import ChatExtractor
    from unstructured_memory.profile.registry import create_extractor

    monkeypatch.setenv(
        "DUALTRACK_EMBEDDER_CONFIG",
        json.dumps({"base_url": server.url, "model": "m", "api_key": "sk-test"}),
    )
    settings = Settings(
        embedder="openai",
        profile_extractor="openai",
        profile_extractor_config={"base_url": server.url, "model": "m", "api_key": "sk-chat"},
    )
    for dump in (repr(settings), str(settings.model_dump()), settings.model_dump_json()):
        assert "sk-test" not in dump
        assert "sk-chat" not in dump
    assert json.loads(settings.model_dump_json())["embedder_config"]["api_key"] == "**********"
    embedder = create_embedder(settings.embedder, settings.embedder_config)
    assert isinstance(embedder, OpenAIEmbedder)
    with embedder:
        embedder.embed_query("hi")
    assert server.headers[0]["Authorization"] == "Bearer sk-test"
    extractor = create_extractor(settings.profile_extractor, settings.profile_extractor_config)
    assert isinstance(extractor, ChatExtractor)
    assert extractor.config.api_key is not None
    assert extractor.config.api_key.get_secret_value() == "sk-chat"
