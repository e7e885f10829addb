"""Attention: extraction, views beyond one head, head statistics, exports, figures, CLI."""
