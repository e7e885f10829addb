"""The decoder side: next-token distributions, their shaping (temperature, top-k, top-p) and generation."""
