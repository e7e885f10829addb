"""Fine-tuning: datasets, training a classifier, the tiny Transformer, analysis, figures, CLI."""
