"""Model sizes side by side: parameters per component counted from the tensors, memory, forward time."""
