"""Entry point: page config, navigation and the shared sidebar (model, device, sentence)."""

import streamlit as st

from ui.state import FIRST_PAGE_SHOWN, import_model_stack, sidebar

st.set_page_config(page_title="Inside BERT: attention explorer", page_icon="🔍", layout="wide")

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", url_path="home", default=True),
    st.Page("pages/attention.py", title="Attention Explorer", icon=":material/grid_on:", url_path="attention"),
    st.Page("pages/step_by_step.py", title="Attention, step by step", icon=":material/stairs:",
            url_path="step-by-step"),
    st.Page("pages/positional.py", title="Positional encoding", icon=":material/waves:", url_path="positional"),
    st.Page("pages/fill_mask.py", title="Fill-mask", icon=":material/edit_note:", url_path="fill-mask"),
    st.Page("pages/finetune.py", title="Fine-tuning lab", icon=":material/model_training:", url_path="finetune"),
]

sidebar()
page = st.navigation(PAGES)
if page.url_path:  # Home (the default page) needs no torch for a cached heatmap; the others import it at their top
    import_model_stack()
page.run()
FIRST_PAGE_SHOWN.set()
