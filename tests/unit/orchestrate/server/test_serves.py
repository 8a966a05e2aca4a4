"""orchestrate/server/serves.py: the server asked, before the load, whether it serves what the load will send; a
small HTTP server on 127.0.0.1 answers as llama-server would."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests

from orchestrate.errors import TokenswarmError
from orchestrate.scenario.spec import ImageSpec, RequestSpec
from orchestrate.server.preflight import ServerFacts
from orchestrate.server.serves import PROBES, NotServedError, check_serves

NO_EMBEDDINGS = {"error": {"code": 501, "message": "This server does not support embeddings. Start it with "
                                                   "`--embeddings`", "type": "not_supported_error"}}
EMBEDDING = {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}],
             "usage": {"prompt_tokens": 2, "total_tokens": 2}}
RANKED = {"results": [{"index": 0, "relevance_score": 0.9}], "usage": {"prompt_tokens": 4}}


class Server:
    """Answers each POST path with the (status, body) ``replies`` holds for it (404 otherwise); keeps what it got."""

    def __init__(self) -> None:
        self.replies: dict[str, tuple[int, bytes]] = {}
        self.received: list[tuple[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", 0))
                owner.received.append((self.path, json.loads(self.rfile.read(length) or b"null")))
                status, body = owner.replies.get(self.path, (404, b'{"error":{"code":404,"message":"File Not Found",'
                                                                  b'"type":"not_found_error"}}'))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def answer(self, path: str, status: int, body: Any) -> None:
        self.replies[path] = (status, body if isinstance(body, bytes) else json.dumps(body).encode())

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    found = Server()
    try:
        yield found
    finally:
        found.close()


@pytest.fixture
def session() -> Iterator[requests.Session]:
    with requests.Session() as s:
        yield s


def refusal(spec: RequestSpec, url: str, session: requests.Session, facts: ServerFacts | None = None) -> str:
    with pytest.raises(NotServedError) as info:
        check_serves(spec, url, session, facts or ServerFacts())
    message = str(info.value)
    assert "\n" not in message
    return message


def test_the_error_is_one_of_tokenswarm_s() -> None:
    assert issubclass(NotServedError, TokenswarmError)


def test_embeddings_refused_by_llama_cpp_name_the_flag_and_quote_the_server(server: Server,
                                                                             session: requests.Session) -> None:
    server.answer("/v1/embeddings", 501, NO_EMBEDDINGS)
    message = refusal(RequestSpec(endpoint="embeddings", inputs_per_request=4), server.url, session)
    assert message == (f"{server.url}/v1/embeddings: the server does not serve embeddings (HTTP 501: This server does "
                       "not support embeddings. Start it with `--embeddings`); start llama-server with --embeddings")
    assert server.received == [("/v1/embeddings", {"input": ["probe"]})]  # one one-word request


def test_a_server_that_embeds_passes(server: Server, session: requests.Session) -> None:
    server.answer("/v1/embeddings", 200, EMBEDDING)
    check_serves(RequestSpec(endpoint="embeddings"), server.url, session, ServerFacts())
    assert server.received == [("/v1/embeddings", PROBES["embeddings"])]


def test_rerank_is_probed_at_its_own_path(server: Server, session: requests.Session) -> None:
    server.answer("/v1/rerank", 200, RANKED)
    check_serves(RequestSpec(endpoint="rerank"), server.url, session, ServerFacts())
    assert server.received == [("/v1/rerank", {"query": "probe", "documents": ["probe"]})]


def test_a_rerank_path_the_server_lacks_names_reranking(server: Server, session: requests.Session) -> None:
    message = refusal(RequestSpec(endpoint="rerank"), server.url, session)
    assert message.startswith(f"{server.url}/v1/rerank: the server does not serve rerank (HTTP 404: File Not Found)")
    assert message.endswith("start llama-server with --reranking")


def test_an_error_body_that_is_not_json_is_quoted_as_text(server: Server, session: requests.Session) -> None:
    server.answer("/v1/embeddings", 502, b"<html>bad gateway</html>" + b"x" * 300)
    message = refusal(RequestSpec(endpoint="embeddings"), server.url, session)
    assert "(HTTP 502: <html>bad gateway</html>xxx" in message and "x" * 200 not in message


def test_no_answer_at_all_is_refused_too(server: Server, session: requests.Session) -> None:
    url = server.url
    server.close()  # the port now refuses connections
    message = refusal(RequestSpec(endpoint="embeddings"), url, session)
    assert message == f"{url}/v1/embeddings: no answer to a one-word embeddings request (ConnectionError)"


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_the_streaming_endpoints_are_not_probed(server: Server, session: requests.Session, endpoint: str) -> None:
    check_serves(RequestSpec(endpoint=endpoint), server.url, session, ServerFacts())
    assert server.received == []


def test_images_to_a_server_without_vision_name_mmproj(session: requests.Session) -> None:
    facts = ServerFacts(props={"modalities": {"vision": False, "audio": False}})
    message = refusal(RequestSpec(images=ImageSpec()), "http://127.0.0.1:9", session, facts)
    assert message == ("http://127.0.0.1:9: the server takes no images (/props modalities.vision is false); start "
                       "llama-server with --mmproj FILE (the model's multimodal projector)")


@pytest.mark.parametrize("props", [{}, {"modalities": {"vision": True}}, {"modalities": None}, {"modalities": {}},
                                   {"build_info": "b1"}])
def test_images_pass_unless_the_server_says_it_has_no_vision(session: requests.Session,
                                                             props: dict[str, Any]) -> None:
    check_serves(RequestSpec(images=ImageSpec()), "http://127.0.0.1:9", session, ServerFacts(props=props))


def test_text_to_a_server_without_vision_passes(session: requests.Session) -> None:
    check_serves(RequestSpec(), "http://127.0.0.1:9", session, ServerFacts(props={"modalities": {"vision": False}}))
