"""The generated tiny reranker with the real ``llama-server`` (build 11434) started with ``--reranking``:
``/v1/rerank`` scores every document (P("yes") from the 2-row head, in (0, 1)), the same whether a
document is ranked alone or batched with others, and counts ``tokens(query) + tokens(document) + 3``
per document in ``usage.prompt_tokens`` (the ``rerank`` template is ``<s>{query}</s>{document}</s>``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from orchestrate.scenario.spec import ServerSpec
from orchestrate.server.launchers import make_launcher
from orchestrate.server.launchers.base import Launcher
from orchestrate.standins.tinyrerank import tiny_reranker_path

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

QUERY = "what is a cat"
DOCUMENTS = ["a cat is an animal", "the sky is blue", "dogs bark", "cats purr loudly at night"]


@pytest.fixture(scope="module")
def rerank_server(llama_server_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    """The real server with the tiny reranker and ``--reranking`` (2 slots of 1,024 tokens)."""
    spec = ServerSpec(launcher="process", binary=str(llama_server_binary), model=str(tiny_reranker_path()),
                      flags={"reranking": True, "parallel": 2, "ctx-size": 2048, "threads": 1})
    folder = tmp_path_factory.mktemp("rerank-server")
    with make_launcher(spec, folder / "server.log") as launcher:
        launcher.start()
        launcher.wait_ready(60)
        yield launcher


def rerank(server: Launcher, documents: list[str]) -> dict[str, Any]:
    reply = requests.post(f"{server.url}/v1/rerank", timeout=30, json={
        "query": QUERY, "documents": documents, "top_n": len(documents)})
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def tokens(server: Launcher, text: str) -> int:
    reply = requests.post(f"{server.url}/tokenize", timeout=30, json={"content": text})
    assert reply.status_code == 200, reply.text
    return len(reply.json()["tokens"])


def test_rerank_scores_every_document_and_counts_its_tokens(rerank_server: Launcher) -> None:
    body = rerank(rerank_server, DOCUMENTS)
    results = body["results"]
    assert sorted(r["index"] for r in results) == [0, 1, 2, 3]
    scores = [r["relevance_score"] for r in results]
    assert all(isinstance(s, float) and 0.0 < s < 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) == len(DOCUMENTS)  # each query/document pair gets its own score
    query = tokens(rerank_server, QUERY)
    expected = sum(query + tokens(rerank_server, doc) + 3 for doc in DOCUMENTS)
    assert body["usage"] == {"prompt_tokens": expected, "total_tokens": expected}
    # batching does not change a score: each document ranked alone scores the same
    by_index = {r["index"]: r["relevance_score"] for r in results}
    for i, doc in enumerate(DOCUMENTS):
        alone = rerank(rerank_server, [doc])["results"]
        assert alone[0]["relevance_score"] == pytest.approx(by_index[i], abs=1e-4)
