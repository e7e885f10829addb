"""Why did the model say that? Head ablation, head importance, activation patching, token attribution."""
