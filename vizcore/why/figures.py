"""The Why? page's figures: matrix -> tidy table -> chart object (never displayed here).

Sections: ablation, importance, patching, attribution. Diverging scales are centred on 0 and carry
a legend; every cell and bar has its value in the hover text.
"""

from __future__ import annotations

# ---- ablation ----------------------------------------------------------------------------------


# ---- importance --------------------------------------------------------------------------------


# ---- patching ----------------------------------------------------------------------------------


# ---- attribution -------------------------------------------------------------------------------
