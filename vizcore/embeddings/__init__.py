"""Sentence embeddings: pooled vectors of any layer, cosine similarity, semantic search, CLI."""
