"""The whole Transformer: encoder-decoder models, their three attentions, and a date translator trained here.

``record`` (the one record every encoder-decoder pass produces), ``dates`` (the task: spelled-out
English dates -> ISO dates, with the gold alignment), ``model`` (the tutorial-style encoder-decoder),
``training``, ``decoding`` (greedy and beam, step by step), ``hub`` (T5 / BART / Marian from the hub),
``figures``, ``cli``.
"""
