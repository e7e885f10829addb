"""What attention weights hide: value-weighted attention (Kobayashi et al. 2020), sinks, residual-stream norms."""
