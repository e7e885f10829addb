"""Serving a class from one process: the batched inference queue (``queue``), the cache of runs (``cache``), torch's
threads (``threads``), the C heap (``memory``) and the environment's settings (``settings``)."""
