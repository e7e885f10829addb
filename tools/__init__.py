"""Tools that make what the app ships (masked-LM training, its corpus, its model card).

They import ``vizcore``; ``vizcore`` and the app never import them.
"""
