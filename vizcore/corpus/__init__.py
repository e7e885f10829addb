"""Head roles and syntax over a corpus: Clark et al.'s per-head measures for many sentences, in-process or on Ray.

``inputs`` reads a corpus (text, CSV, Parquet); ``measures`` is the one per-batch function (a padded batch
-> one row per sentence, layer and head; with ``--syntax`` also word-level dependency counts);
``syntax`` aligns spaCy's parses to word pieces and scores heads against relations; ``engine`` runs the
batches in shards (local or Ray) and writes ``DIR/``; ``results`` reads a finished ``DIR``; ``roles``
names each head's role; ``figures`` draws them; ``cli`` is ``python -m vizcore corpus``.
"""
