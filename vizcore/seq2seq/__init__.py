"""The whole Transformer: encoder-decoder models, their three attentions, and a date translator trained here.

``record`` (the one record every encoder-decoder pass produces), ``dates`` (the task: spelled-out
English dates -> ISO dates, with the gold alignment), ``model`` (the tutorial-style encoder-decoder),
``translator`` (the shipped model: one text -> one record and its decoding), ``decoding`` (greedy and
beam, step by step), ``alignment`` (does a cross-attention head look where it should?), ``training``
(the live background job and the shipped model's training), ``hub`` (T5 / BART / Marian from the hub),
``figures``, ``cli`` (``python -m vizcore translate-date``).

Shown on the page ``/translate`` (``pages/seq2seq.py``, ``ui/seq2seq/``); explained in docs/ENCODER_DECODER.md.
"""
