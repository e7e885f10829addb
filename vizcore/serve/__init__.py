"""Serving a class from one process: the batched inference queue (``queue``) and torch's threads (``threads``)."""
