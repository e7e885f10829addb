"""Models: the static catalog, loading, and one forward pass with hooks."""
