"""Lessons: a guided course through the Transformer, written as data (``data/*.toml``) and drawn from the
model's own numbers. ``lesson``: the file format and its checks; ``kinds``: the step kinds (each calls an
existing vizcore computation and figure); ``answers``: a question's right answer, computed from a step's view."""
