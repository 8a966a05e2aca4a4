"""Sampled prompts → the requests ``load.request`` asks for: texts grouped into embeddings inputs or a rerank query
and its documents, images attached to chat prompts.

Stage: load. ``prompts.prepare_prompts`` samples as many texts as the requests need (``texts_per_request``) and
hands them here before ``prompts.jsonl`` is written; chat and completions without images pass unchanged.
"""

from __future__ import annotations

from locustfiles.dataset import Prompt
from locustfiles.endpoints import EMBEDDINGS, ONE_BODY, RERANK, prompt_text
from orchestrate.load.images import attach_images
from orchestrate.scenario.spec import LoadSpec, RequestSpec


def texts_per_request(spec: RequestSpec) -> int:
    """Sampled texts one request uses: N inputs to embed, a query and N documents to rank, else one prompt."""
    if spec.endpoint == EMBEDDINGS:
        return spec.inputs_per_request
    if spec.endpoint == RERANK:
        return spec.inputs_per_request + 1
    return 1


def group_inputs(prompts: list[Prompt], spec: RequestSpec) -> list[Prompt]:
    """Consecutive texts as one request each (a last group that is short is left out). Its ``prompt_tokens`` is
    the texts' counts summed (the sampler's: chat-templated); the server's own count is in the records."""
    size = texts_per_request(spec)
    out = []
    for k in range(len(prompts) // size):
        group = prompts[k * size:(k + 1) * size]
        texts = [prompt_text(p) for p in group]
        query = group[0].messages if spec.endpoint == RERANK else ()
        out.append(Prompt(k, group[0].conversation_id, query, sum(p.prompt_tokens for p in group), 0,
                          inputs=tuple(texts[1:] if spec.endpoint == RERANK else texts)))
    return out


def shape_prompts(load: LoadSpec, prompts: list[Prompt]) -> list[Prompt]:
    """The requests of ``load`` from its sampled prompts (``texts_per_request`` texts each)."""
    spec = load.request
    if spec.endpoint in ONE_BODY:
        return group_inputs(prompts, spec)
    if spec.images is not None:
        return attach_images(prompts, spec.images, load.seed)
    return prompts
