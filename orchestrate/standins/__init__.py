"""The stand-ins: what tokenswarm makes instead of downloading, so a run or a test needs no network.

Hand-written generators, on the ground floor (every stage may import them; they import no stage):
``tinymodel`` writes the tiny GGUF models (``tiny``, ``tiny-draft``, ``tiny-deep`` ...), ``sharegpt_synth``
the synthetic ShareGPT files, both from the pseudo-words of ``lexicon``; ``datasets`` resolves a dataset
name to its file, generating ``synthetic:N`` once and caching it.
"""
