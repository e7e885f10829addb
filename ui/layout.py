"""The app's own page layout rules, injected once per run by ``app.py``: what Streamlit's defaults get wrong
on the screens this app is used on (a teacher's 1024 x 768 laptop, a projector).

Streamlit's wide layout keeps 90 px of padding on each side of the page and 108 px above it whatever the
screen; on a 1024 px screen beside the 338 px sidebar that left 507 px for the page, so example buttons,
metrics and control labels were cut or broken inside words. Below 1400 px wide the padding shrinks, and a
metric's label wraps rather than ending in an ellipsis.

``lazy_tabs``: tabs whose pages compute and draw only the open one (step by step, Fill-mask).

The projector setting (``ui.state.presenting``: the sidebar's toggle or ``?present=1``): every size Streamlit
draws is in rem, so the root size goes from the theme's 18 px to 24 px (body text 24 px, its smallest text,
0.75 rem, 18 px); text Streamlit fades to 60 % (captions, help, placeholders) is drawn at full strength (7:1 is
the bar in a room, #666666 on white is 5.7:1); and ``for_screen`` re-lays every chart for the size
(``vizcore.plot.for_projector``) instead of zooming it.
"""

from __future__ import annotations

import numbers
import re
from typing import Mapping, Sequence, TypeVar

import streamlit as st

from ui.state import presenting

T = TypeVar("T")
NARROW_PX = 1400

CSS = f"""
<style>
/* A metric's label wraps onto a second line instead of ending in "…" ("max |Δ| attention, layer 1 h…") */
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] * {{
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}}
/* Streamlit's plotly theme draws titles, tick labels and legends in #808495, 3.8:1 on white (axe reads no SVG):
   the page's text colour instead (black in the light theme, 21:1; the dark theme's own light text there); so too
   a bar's value written beside it (outside the bar, on the page's background: the class's answers on Lessons); the
   tick labels of every axis (a second map's are in .x2tick: Why?'s heads-off map, NSP's grids) */
.js-plotly-plot .main-svg [class$="title"], .js-plotly-plot g[class$="tick"] > text,
.js-plotly-plot .legendtext, .js-plotly-plot .cbaxis text, .js-plotly-plot .legendtitletext,
.js-plotly-plot .bartext-outside {{
  fill: currentColor !important;
}}
/* Focus, seen from across a room (WCAG 2.4.7 and 1.4.11, 3:1): Streamlit rings a button, link, tab or summary with
   its primary colour at half strength, 2.8:1 on white, and on a primary button the ring is red on red (no visible
   change at all); an input only changes its 1 px border. A 3 px ring in the text colour (21:1 in the light theme). */
button:focus-visible, a:focus-visible, summary:focus-visible, [role="tab"]:focus-visible,
[role="switch"]:focus-visible {{
  outline: 3px solid TEXT !important; outline-offset: 2px !important;
}}
/* a tab: a bar above it and one below, inside (the tab list clips what is outside, an outline inside covers the
   label, and the chosen tab's red line covers the bar below) */
[role="tab"]:focus-visible {{
  outline: none !important; box-shadow: inset 0 5px 0 TEXT, inset 0 -3px 0 TEXT !important;
}}
/* a radio option and a slider's thumb: their input is hidden, and Streamlit marks focus with a light grey row
   (1.1:1) or a pink halo round the thumb (under 3:1); react-aria marks the one the keyboard reached */
[data-testid="stRadioOption"][data-focus-visible], [data-testid="stSlider"] [data-focus-visible] {{
  outline: 3px solid TEXT !important; outline-offset: 2px !important;
}}
/* Focus not hidden (WCAG 2.4.11): Shift+Tab up the page scrolled the control it reached to the top edge, under
   Streamlit's header (68 px, opaque): Why?'s question, its focus ring and all, was out of sight */
[data-testid="stMain"] {{ scroll-padding-top: 4.5rem; }}
[data-testid="stTextAreaRootElement"]:focus-within, [data-testid="stTextInputRootElement"]:focus-within,
[data-testid="stNumberInputContainer"]:focus-within, [data-baseweb="select"]:focus-within {{
  outline: 2px solid TEXT; outline-offset: 1px;
}}
@media (max-width: {NARROW_PX}px) {{
  [data-testid="stMainBlockContainer"] {{ padding-left: 1.5rem; padding-right: 1.5rem; padding-top: 3.5rem; }}
}}
</style>
"""


PROJECTOR_PX = 24
PROJECTOR_LABEL_PX = 20  # vizcore.plot.PROJECTOR_MIN_SIZE: chart labels on a projector

PROJECTOR_CSS = f"""
<style>
html {{ font-size: {PROJECTOR_PX}px; }}
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] *, [data-testid="stWidgetLabel"] *,
[data-testid="stTooltipHoverTarget"] *, [data-testid="stMarkdownContainer"] small,
[data-testid="stMetricDelta"] *, [data-testid="stExpanderDetails"] small {{
  color: inherit !important; opacity: 1 !important;
}}
[data-testid="stSidebarNavLink"] p {{ white-space: normal !important; overflow: visible !important; }}
code {{ font-size: 0.9em !important; }}
/* the page's scroll region keeps the focus for the presenter's keys; Streamlit frames it (a shadow on its ::before)
   once a key has been pressed, and a click then left that frame across the step on the projector */
[data-testid="stMain"]:focus-visible::before {{ box-shadow: none !important; }}
/* KaTeX draws a script within a script (the "model" of d_model in an exponent) at half its size: 33 px keeps it
   at 16.5 px (at KaTeX's own 1.21em of 24 px it was 14.5) */
.katex {{ font-size: 33px !important; }}
/* a chosen segment: its label in the text colour (the primary red on its tint is 6.2:1), told apart by weight */
button[data-variant="segmented_control"][aria-checked="true"] p {{ color: TEXT !important; font-weight: 700; }}
</style>
"""


# The dark theme's primary colour is a light red (.streamlit/config.toml): a primary button's label, and a chosen
# option's tag in a multiselect, black on it (white was 2.5:1), white on the light theme's dark red as Streamlit draws.
# A disabled primary button keeps Streamlit's own grey label (white on its light grey was invisible: the Lessons
# page's Check before a choice).
BUTTON_CSS = """
<style>
[data-testid="stBaseButton-primary"]:not(:disabled), [data-testid="stBaseButton-primary"]:not(:disabled) *,
[data-testid="stMultiSelectTagsContainer"] [data-tag], [data-testid="stMultiSelectTagsContainer"] [data-tag] * {
  color: light-dark(#FFFFFF, #000000) !important;
}
</style>
"""
# The text colour of the theme on screen: CSS's light-dark() follows the app's color-scheme, which Streamlit sets on
# its root element (light or dark) and changes in place when a user picks another theme in the settings menu or the
# computer switches to its dark mode: no rerun, so the server cannot write the colour in (st.context.theme.type kept
# the light theme's black focus rings on the dark background, 1.1:1, until the next run).
TEXT = "light-dark(#000000, #FFFFFF)"


def apply() -> None:
    """Call once per run after the sidebar (it reads the projector setting), before the page draws (an
    element-free style block: it takes no space)."""
    if presenting():
        st.set_page_config(initial_sidebar_state="collapsed")  # the room needs the width; the sidebar is a click away
    css = CSS + (PROJECTOR_CSS if presenting() else "") + BUTTON_CSS
    st.html(css.replace("TEXT", TEXT))


def for_screen(figure: T) -> T:
    """``figure`` as this session shows it: re-laid for the projector when that setting is on (a plotly or an
    altair chart; ``vizcore.plot.for_projector``), else unchanged. Every chart a page shows goes through here."""
    if not presenting():
        return figure
    from vizcore.plot import for_projector

    return for_projector(figure)


UPRIGHT_TITLE_CHARS = 8  # an upright title longer than this leaves a stretched chart for the line above it


def _upright_titles_out(figure) -> list[str]:
    """Take the long titles written upright (a y axis's, a colour bar's along its bar) and those over labels on top
    out of ``figure``, in place, and return them as words for the line above the chart: upright, a title is as long
    as the plot is high, and a presenter's step leaves a plot 60-150 px high ("query (attending)" and "attention
    weight" ran off both ends); over the top labels, plotly placed it for them lying flat, and then turned them."""
    words = []

    def axis_out(axis, where: str, longer_than: int = UPRIGHT_TITLE_CHARS) -> None:
        text = re.sub(r"<[^>]+>", " ", axis.title.text or "")
        if len(text) > longer_than:
            words.append(f"{' '.join(text.split())} {where}")
            axis.title.text = None

    def bar_out(bar) -> None:
        text = re.sub(r"<[^>]+>", " ", bar.title.text or "")
        if len(text) > UPRIGHT_TITLE_CHARS and bar.orientation != "h":
            words.append(f"colour: {' '.join(text.split())}")
            bar.title.text = None

    figure.for_each_yaxis(lambda axis: axis_out(axis, "down the side"))
    # over labels on top that plotly turns to fit, the title was placed for them lying flat: it sat on them
    figure.for_each_xaxis(lambda axis: axis_out(axis, "along the top", 0), selector={"side": "top"})
    figure.for_each_trace(lambda trace: bar_out(trace.colorbar), selector=lambda trace: "colorbar" in trace)
    figure.for_each_coloraxis(lambda axis: bar_out(axis.colorbar))
    return list(dict.fromkeys(words))


def fitted(figure: T) -> tuple[T, str | None]:
    """A copy of ``figure`` without a height of its own, for ``height="stretch"``: it takes its container's height
    (presenter mode's step fills the window with it; ``ui/lessons/presenter.py``); and its title as plain text, taken
    out of the chart (a page writes it above: in a short chart plotly's title sat on the top axis's labels), with the
    long upright titles the chart leaves out (``_upright_titles_out``: "query (attending) down the side"). A chart
    made of several (altair's concat and facet) keeps its own heights (``own_height``); its title comes out too when
    it is made of one (``_title_out_of_one``), else it is None (the chart draws its own)."""
    if hasattr(figure, "to_plotly_json"):
        from vizcore.plot import legend_above, own_copy

        fitted_figure = own_copy(figure)  # the figure may be a cached one, shared by every session
        title = re.sub(r"<[^>]+>", " ", fitted_figure.layout.title.text or "")
        # the top margin only for what the axes need (their automargin grows it), and the plot may shrink to
        # FITTED_PLOT_PX high for them (plotly's least is 64 px: a 2-row map's upright key labels were cut instead)
        fitted_figure.update_layout(height=None, autosize=True, title_text=None, margin_t=PROJECTOR_PX,
                                    minreducedheight=FITTED_PLOT_PX)
        # text on bars that plotly would shrink to fit them (11 px in a short chart) is left out below the labels' size
        fitted_figure.update_layout(uniformtext={"minsize": PROJECTOR_LABEL_PX, "mode": "hide"})
        # a log axis's powers of ten: plotly draws the exponent in a superscript at 0.77 of the label (18 px)
        fitted_figure.update_xaxes(exponentformat="e", selector={"type": "log"})
        fitted_figure.update_yaxes(exponentformat="e", selector={"type": "log"})
        # a colour bar's title along its bar, not above it: written across, "attention weight" at 22 px took the
        # width of a heatmap of 13 tokens (a presenter's step at 1024 px shows two figures side by side)
        fitted_figure.for_each_trace(lambda trace: _ends_only(trace.update(colorbar_title_side="right").colorbar),
                                     selector=lambda trace: "colorbar" in trace)
        fitted_figure.for_each_coloraxis(lambda axis: _ends_only(axis.update(colorbar_title_side="right").colorbar))
        # the labels along x at the first angle of 0, 30 or 90 degrees at which they do not overlap (plotly measures
        # them in the browser), not at the figure's own fixed angle: a wide figure's tokens lie flat, not slanted
        fitted_figure.for_each_xaxis(lambda axis: setattr(axis, "tickangle", None))  # unset: plotly's "auto"
        legend_above(fitted_figure)  # under a plot as short as this, a legend lay on the x axis's title
        # subplots' titles stand over their plots, where the top margin has no room of its own for them
        if any(note.yref == "paper" and (note.y or 0) >= 1 for note in fitted_figure.layout.annotations):
            fitted_figure.update_layout(margin_t=2 * PROJECTOR_PX)
        # a number axis up the side: three or four numbers (plotly's least is five, 40 px apart, whatever the height)
        fitted_figure.for_each_yaxis(lambda axis: axis.update(nticks=3), selector=_numbers_up_the_side(fitted_figure))
        return fitted_figure, " · ".join([" ".join(title.split()), *_upright_titles_out(fitted_figure)]).strip(" ·")
    import altair as alt

    if isinstance(figure, (alt.Chart, alt.LayerChart)):
        return figure.properties(height="container"), ""
    return _title_out_of_one(_lower(figure, FITTED_CONCAT_PX))


def own_height(figure) -> bool:
    """An altair chart made of several keeps its plots' own heights in a presenter's step (``fitted``); a plotly
    figure, one altair chart or HTML takes the room it is given."""
    return type(figure).__name__ in ("VConcatChart", "HConcatChart", "ConcatChart", "FacetChart")


def _title_out_of_one(chart):
    """A concat of one chart with its title taken out, and the title (with its subtitle) as words for the line above
    it, where they wrap: drawn by vega at a projector's size, "Held-out accuracy, 512 sequences" ran past its
    column. Several charts keep their titles (None: the chart draws its own)."""
    spec = chart.to_dict()
    parts = spec.get("vconcat") or spec.get("hconcat") or spec.get("concat") or []
    title = parts[0].pop("title", None) if len(parts) == 1 and isinstance(parts[0], dict) else None
    if title is None:
        return chart, None
    if isinstance(title, dict):
        subtitle = title.get("subtitle") or ""
        title = " · ".join(str(part) for part in (title.get("text") or "", subtitle) if part)
    return type(chart).from_dict(spec, validate=False), str(title)


FITTED_PLOT_PX = 30  # the least height of a presenter's plot that makes room for its labels (two rows of a map)
FITTED_CONCAT_PX = 170  # each plot of an altair chart made of several, in a presenter's step


def _lower(chart, height: int):
    """An altair chart made of several with no plot higher than ``height`` px (they keep their own heights: a
    presenter's step at 1024 x 768 has about 300 px for a chart, and a 360-px plot lost its axis under the step)."""
    spec = chart.to_dict()

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("height"), (int, float)) and node["height"] > height:
                node["height"] = height
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return type(chart).from_dict(spec, validate=False)


def _ends_only(bar) -> None:
    """A colour bar's three numbers (``vizcore.plot``'s projector bar: ends and middle) cut to its two ends, in place:
    a presenter's plot can be 50 px high, too low for three at 20 px ("0", "0.5", "1.0" met at 1280 x 720)."""
    if bar.tickvals is not None and len(bar.tickvals) == 3 and bar.lenmode != "pixels":
        bar.tickvals = [bar.tickvals[0], bar.tickvals[2]]
        if bar.ticktext is not None and len(bar.ticktext) == 3:
            bar.ticktext = [bar.ticktext[0], bar.ticktext[2]]


def _numbers_up_the_side(figure):
    """A selector of the y axes that hold numbers (not categories): the axis's type says so, or, unset, the first
    trace on it has numbers for y."""
    def numeric(axis) -> bool:
        if axis.type in ("linear", "log"):
            return axis.type == "linear" and axis.tickvals is None
        if axis.type not in (None, "-") or axis.tickvals is not None:
            return False
        ref = "y" + axis.plotly_name[5:]
        trace = next((t for t in figure.data if (getattr(t, "yaxis", None) or "y") == ref and hasattr(t, "y")), None)
        if trace is not None and isinstance(trace.y, dict):  # numbers as plotly's typed array: dtype "f8", "i4"...
            return trace.y.get("dtype", "")[:1] in ("f", "i", "u")
        values = [] if trace is None or trace.y is None else list(trace.y)[:5]
        return bool(values) and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values)
    return numeric


def lazy_tabs(labels: Sequence[str], key: str, keep: Mapping[str, object] | None = None) -> Sequence:
    """Tabs that run only the open one: a click on a tab reruns the page with it open (``on_change="rerun"``),
    and ``tab.open`` is True for that tab alone, so a page draws ``if tab.open:`` what it shows there. Step by
    step recomputed and sent its 25 charts on every change of layer or sentence, four tabs of them hidden.

    ``keep``: the widgets inside the tabs (key -> default), pinned in the session so that a value set in one
    tab is still there after a visit to another (Streamlit drops a widget's state after a run that did not
    draw it). Those widgets take their default from here, not from their own ``value`` (which would warn of a
    value set twice); a default of None pins a value only once the widget has one.
    """
    for name, default in (keep or {}).items():
        if name in st.session_state or default is not None:
            st.session_state[name] = st.session_state.get(name, default)
    return st.tabs(list(labels), key=key, on_change="rerun")
