"""The ground floor the stages stand on: what tokenswarm generates instead of downloading, the tiny GGUF models
(``tinymodel``) and synthetic ShareGPT data (``sharegpt_synth``), from one pseudo-word lexicon. Imports no stage.
"""
