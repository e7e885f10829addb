"""Feed-forward neurons: what each one fires on over a corpus, over the current sentence, and the sentence's
non-negative factors.

A neuron is one of the d_ff hidden units of a block's feed-forward layer, its activation act(x W_1 + b_1)
(GELU for BERT), read through ``vizcore.model.run.neuron_hooks``. ``topk`` keeps each neuron's k largest
activations over a stream of batches (the corpus job's per-batch part, ``vizcore.corpus.measures``);
``corpus`` merges the shards' hits into ``DIR/neurons.parquet`` and reads it (one neuron's top examples,
neurons by the token they fire on); ``sentence`` is one sentence's activations; ``nmf`` factorises them
(Lee & Seung's multiplicative updates, as Ecco does with scikit-learn); ``figures`` draws them; ``cli`` is
``python -m vizcore neurons``. docs/NEURONS.md says what they can and cannot show.
"""
