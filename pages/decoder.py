"""Generate: a causal LM writes one token at a time; the distribution, its shaping, attention, the lens, beams.

Computation: vizcore/decoder/ (sampling, generation, steps, beam) · figures: vizcore/decoder/figures.py ·
CLI: python -m vizcore generate
UI: ui/decoder/ (page: the model, prompt and controls, the cached computations, the link). URL: /generate
"""

import streamlit as st

from ui import url_state
from ui.decoder import page as gen
from ui.feedback import or_stop
from ui.state import selection

url_state.warn(url_state.read(gen.LINK))
gen.init_state()
st.title("Generate, one token at a time")
st.markdown(
    "A decoder reads the text so far and gives a probability to every token of its vocabulary for the next one. "
    "**Temperature**, **top-k** and **top-p** reshape that distribution before a token is drawn; **greedy** always "
    "takes the top one; **beam search** keeps several continuations and picks the most probable whole sequence. "
    "Each token sees only the ones before it: the **causal mask**.")
name = gen.choose_model()
if not name:
    st.warning("Type a hub id or a local folder of a causal language model.")
    st.stop()
device = selection().device
loaded = gen.causal_model_or_stop(name, device)
controls = gen.controls(name)
gen.explain_tokens(loaded, gen.get_banned(name, device), controls.settings.whole_words)
progress = gen.progress(controls, device, int(st.session_state[gen.K["steps"]]))
gen.step_buttons(progress.finished)
view = or_stop(gen.get_step, name, device, controls.prompt, progress.generated, controls.settings)
gen.show_sequence(view, progress, controls)
bars_tab, attention_tab, lens_tab, beams_tab = st.tabs(
    ["Next token", "Attention and the causal mask", "Layer by layer", "Beams"])
with bars_tab:
    gen.show_bars(view, progress, controls, loaded)
with attention_tab:
    layer, head = gen.layer_and_head(view)
    gen.show_attention(view, layer, head)
with lens_tab:
    gen.show_lens(view)
with beams_tab:
    if progress.beams is None:
        st.info("Choose Beam search above to see the beams.")
    else:
        gen.show_beams(progress.beams, progress.steps)
gen.download(progress)
url_state.write(gen.url_params(controls, progress, layer, head))
