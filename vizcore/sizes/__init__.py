"""Model sizes side by side: parameters per component counted from the tensors, memory, forward time.

The names here import no torch (Home draws its part while torch may still be importing); the counting and
timing are in ``sizes.py``.
"""

COMPONENTS = ("embeddings", "attention_q", "attention_k", "attention_v", "attention_o", "feed_forward", "layernorm",
              "heads")
LENGTHS = (16, 128, 512)
TINY_NAME = "tiny-transformer"  # vizcore/finetune/tiny.py's model, at the Fine-tuning lab's default size
