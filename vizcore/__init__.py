"""vizcore: the computation behind the attention-visualisation app.

Everything here is plain Python + torch + numpy (+ figure objects); nothing imports streamlit,
so every function can be tested and scripted without a browser.
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
