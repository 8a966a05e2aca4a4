"""orchestrate/load/shaping.py: sampled prompts grouped into embeddings and rerank requests, images attached, plain
chat passed through."""

from __future__ import annotations

import pytest

from locustfiles.dataset import Prompt
from locustfiles.endpoints import EMBEDDINGS, ENDPOINTS, RERANK, request_body
from orchestrate.load.shaping import group_inputs, shape_prompts, texts_per_request
from orchestrate.scenario.spec import ImageSpec, LoadSpec, RequestSpec


def prompts(n: int) -> list[Prompt]:
    return [Prompt(i, f"c{i}", ({"role": "user", "content": f"text {i}"},), 10 + i, 50) for i in range(n)]


def load(**request: object) -> LoadSpec:
    return LoadSpec(seed=3, request=RequestSpec(**request))  # type: ignore[arg-type]


@pytest.mark.parametrize(("spec", "texts"), [
    (RequestSpec(), 1),
    (RequestSpec(endpoint="completions"), 1),
    (RequestSpec(images=ImageSpec()), 1),
    (RequestSpec(endpoint="embeddings", inputs_per_request=8), 8),
    (RequestSpec(endpoint="embeddings"), 1),
    (RequestSpec(endpoint="rerank", inputs_per_request=4), 5),  # the query and 4 documents
    (RequestSpec(endpoint="rerank"), 2),
])
def test_texts_per_request(spec: RequestSpec, texts: int) -> None:
    assert texts_per_request(spec) == texts


def test_embeddings_group_n_texts_per_request() -> None:
    out = group_inputs(prompts(10), RequestSpec(endpoint=EMBEDDINGS, inputs_per_request=3))
    assert len(out) == 3  # the tenth text is a short last group: left out
    assert [p.index for p in out] == [0, 1, 2] and [p.conversation_id for p in out] == ["c0", "c3", "c6"]
    assert [p.inputs for p in out] == [("text 0", "text 1", "text 2"), ("text 3", "text 4", "text 5"),
                                       ("text 6", "text 7", "text 8")]
    assert [p.prompt_tokens for p in out] == [10 + 11 + 12, 13 + 14 + 15, 16 + 17 + 18]
    assert all(p.messages == () and p.max_tokens == 0 for p in out)
    assert request_body(ENDPOINTS[EMBEDDINGS], out[1], {}) == {"input": ["text 3", "text 4", "text 5"],
                                                                "encoding_format": "float"}


def test_rerank_groups_a_query_and_n_documents() -> None:
    out = group_inputs(prompts(7), RequestSpec(endpoint=RERANK, inputs_per_request=2))
    assert len(out) == 2
    first = out[0]
    assert first.messages == ({"role": "user", "content": "text 0"},)
    assert first.inputs == ("text 1", "text 2") and first.prompt_tokens == 10 + 11 + 12 and first.max_tokens == 0
    assert out[1].messages[0]["content"] == "text 3" and out[1].inputs == ("text 4", "text 5")
    assert request_body(ENDPOINTS[RERANK], first, {}) == {"query": "text 0", "documents": ["text 1", "text 2"],
                                                           "top_n": 2}


def test_too_few_texts_make_no_request() -> None:
    assert group_inputs(prompts(3), RequestSpec(endpoint=EMBEDDINGS, inputs_per_request=4)) == []
    assert group_inputs([], RequestSpec(endpoint=RERANK)) == []


def test_a_round_trip_through_the_prompts_file_keeps_a_grouped_request() -> None:
    for spec in (RequestSpec(endpoint=EMBEDDINGS, inputs_per_request=2), RequestSpec(endpoint=RERANK)):
        for prompt in group_inputs(prompts(4), spec):
            assert Prompt.from_json(prompt.to_json()) == prompt


@pytest.mark.parametrize("spec", [{}, {"endpoint": "completions"}])
def test_plain_chat_and_completions_pass_unchanged(spec: dict[str, str]) -> None:
    given = prompts(5)
    assert shape_prompts(load(**spec), given) is given


def test_one_body_endpoints_are_grouped() -> None:
    out = shape_prompts(load(endpoint=EMBEDDINGS, inputs_per_request=2), prompts(6))
    assert [p.inputs for p in out] == [("text 0", "text 1"), ("text 2", "text 3"), ("text 4", "text 5")]
    out = shape_prompts(load(endpoint=RERANK, inputs_per_request=1), prompts(6))
    assert [(p.messages[0]["content"], p.inputs) for p in out] == [("text 0", ("text 1",)), ("text 2", ("text 3",)),
                                                                   ("text 4", ("text 5",))]


def test_chat_with_images_gets_them_with_the_load_s_seed() -> None:
    spec = ImageSpec(count=1, sizes=((16, 16),), share=1.0)
    out = shape_prompts(load(images=spec), prompts(4))
    assert all(p.image_sizes == ("16x16",) for p in out)
    assert [p.messages[-1]["content"][0]["text"] for p in out] == [f"text {i}" for i in range(4)]
    assert out == shape_prompts(load(images=spec), prompts(4))  # the seed is the load's: the same run, the same images
