"""What tests and benchmarks share: the tiny-model factory (``tiny``) and masked-LM weights files (``mlm_weights``)."""
