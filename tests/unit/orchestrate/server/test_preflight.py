"""orchestrate/server/preflight.py: the pre-flight session survives a kept-alive connection the server dropped."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import jinja2
import pytest

from orchestrate.report.notes import TOKEN_COUNTERS
from orchestrate.server.preflight import ServerFacts, prompt_token_counter, session, template_renderer

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\nConnection: keep-alive\r\n\r\n"
BODY = b'{"tokens":[1]}\n'


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(rest) < length:
        rest += conn.recv(65536)
    return head


@pytest.fixture
def dropping_server() -> Iterator[tuple[str, list[int]]]:
    """Answers the first request on each connection, then resets the connection at the next one
    (what a client meets when llama.cpp closed a kept-alive connection as it was reused)."""
    listener = socket.create_server(("127.0.0.1", 0))
    served: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                if read_request(conn):
                    served.append(1)  # before the answer: the client may check right after it
                    conn.sendall(OK + BODY)
                if read_request(conn):  # the reuse: reset without a byte of answer
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", served
    listener.close()


def test_a_post_on_a_dropped_keepalive_connection_is_sent_again(dropping_server):
    url, served = dropping_server
    with session() as s:
        for _ in range(3):  # the 2nd and 3rd reuse a connection that the server then resets
            assert s.post(f"{url}/tokenize", json={"content": "a"}, timeout=5).json() == {"tokens": [1]}
    assert len(served) == 3


def test_a_refused_connection_still_fails_at_once():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with session() as s, pytest.raises(Exception) as err:
        s.get(f"http://127.0.0.1:{port}/health", timeout=5)
    assert "refused" in str(err.value).lower() or "Max retries" in str(err.value)


# --- the chat template without /apply-template ---------------------------------------------------

CHATML = ("{%- for message in messages -%}\n  {{- '<|im_start|>' + message.role + '\\n' + message.content + "
          "'<|im_end|>\\n' -}}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n  {{- '<|im_start|>assistant\\n' -}}"
          "\n{%- endif -%}")
"""The template Gemma 3 270M's server reports in /props (llama.cpp's ChatML fallback)."""


def test_the_props_template_renders_as_the_server_renders_it():
    # what the real server's /apply-template returned for this chat (seen on Gemma 3 270M)
    render = template_renderer(ServerFacts(chat_template=CHATML))
    assert render is not None
    assert render([{"role": "user", "content": "Hi there"}]) == "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"


def test_bos_eos_and_raise_exception_reach_the_template():
    facts = ServerFacts(chat_template="{{ bos_token }}{% if messages[0].role != 'user' %}"
                                      "{{ raise_exception('user first') }}{% endif %}{{ messages[0].content }}",
                        special_tokens={"bos_token": "<bos>", "eos_token": "<eos>"})
    render = template_renderer(facts)
    assert render is not None and render([{"role": "user", "content": "x"}]) == "<bos>x"
    with pytest.raises(jinja2.TemplateError, match="user first"):
        render([{"role": "assistant", "content": "x"}])


@pytest.mark.parametrize("template", [None, "", "{% for %}", "{{ raise_exception('no') }}"],
                         ids=["none", "empty", "syntax", "refuses"])
def test_no_usable_template_is_none(template):
    assert template_renderer(ServerFacts(chat_template=template)) is None


@pytest.mark.parametrize("facts, name", [
    (ServerFacts(has_tokenize=True, has_apply_template=True), "server_tokenize"),
    (ServerFacts(has_tokenize=True, chat_template=CHATML), "server_tokenize_local_template"),
    (ServerFacts(has_tokenize=True), "server_tokenize_no_template"),
    (ServerFacts(), "estimate_chars_div_4"),
], ids=["apply-template", "props-template", "no-template", "no-tokenize"])
def test_the_best_counter_the_server_allows_is_named(facts, name):
    chosen, count = prompt_token_counter("http://127.0.0.1:9", session(), facts)
    assert chosen == name and chosen in TOKEN_COUNTERS
    assert (count is None) == (name == "estimate_chars_div_4")
