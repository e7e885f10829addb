"""The step kinds: each names one existing vizcore computation and its figure, and turns them into a ``View``.

A kind is ``Kind(build, params, series, numbers)``: ``build(source, text, params)`` computes and draws; ``params``
are the parameters a lesson file may set (with their defaults; layers and heads 1-based, as in the UI);
``series`` and ``numbers`` name what a question may ask about. ``source`` gives the (cached) models and runs: the
app passes the server-wide caches (``ui.state``), tests a tiny model. Nothing here computes attention, masks or
positions itself: it calls ``vizcore.inside``, ``vizcore.attention``, ``vizcore.positional`` ... and their figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping, Protocol

import numpy as np

from vizcore.colours import ATTENTION, SEQUENTIAL
from vizcore.errors import VizError
from vizcore.lessons.view import Number, Series, View

if TYPE_CHECKING:
    from vizcore.model.loading import LoadedModel
    from vizcore.model.record import Run


class Source(Protocol):
    """Where a step gets its models and runs (the app: the server's caches)."""

    def model(self, head: str = "base", name: str | None = None) -> LoadedModel:
        """The sidebar's model (``name`` None) or a named built-in one, with ``head``."""

    def run(self, text: str, hidden: bool = False) -> Run: ...


@dataclass(frozen=True)
class Kind:
    build: Callable[[Source, str, Mapping], View]
    params: Mapping[str, object] = field(default_factory=dict)
    series: tuple[str, ...] = ()
    numbers: tuple[str, ...] = ()
    query: bool = False  # the learner picks the query token (a selectbox of the sentence's tokens)
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # parameters that name a part of the view


def _labels(tokens: list[str]) -> list[str]:
    from vizcore.inside.figures import token_labels

    return token_labels(tokens)


def _layer_head(shape: tuple[int, ...], params: Mapping) -> tuple[int, int]:
    """The step's 1-based layer and head as 0-based indices, checked against ``shape`` (layers, heads, ...): the
    attention of the model on screen."""
    layers, heads = shape[:2]
    layer, head = int(params["layer"]), int(params["head"])
    if not (1 <= layer <= layers and 1 <= head <= heads):
        raise VizError(f"This step shows layer {layer}, head {head}; the model on screen has {layers} layers of "
                       f"{heads} heads. Pick the default model in the sidebar.")
    return layer - 1, head - 1


def _one_of(params: Mapping, name: str, options) -> str:
    """A parameter that names one of ``options`` (a part of a view), or a VizError that lists them."""
    value = str(params[name])
    if value not in options:
        raise VizError(f"This step's {name} '{value}' is not one of {', '.join(options)}.")
    return value


def query_position(tokens: list[str], params: Mapping) -> int:
    """The query: ``query_index`` (the learner's pick) if given, else the first token equal to ``query``, else the
    last ordinary token."""
    index = params.get("query_index")
    if index is not None and 0 <= int(index) < len(tokens):
        return int(index)
    word = str(params.get("query", "")).lower()
    if word in tokens:
        return tokens.index(word)
    return max(len(tokens) - 2, 0)


# ---- lesson 1: one query's attention (vizcore.inside.steps) -------------------------------------------------

QUERY_PARTS = {"scores": "q·k", "scaled": "q·k / √d_k", "weights": "softmax: the weights", "sum": "weights × V"}


def query_steps(source: Source, text: str, params: Mapping) -> View:
    from vizcore.inside.steps import layer_steps
    from vizcore.plot import axis_labels, matrix_heatmap

    loaded, run = source.model(), source.run(text, hidden=True)
    layer, head = _layer_head((loaded.num_layers, loaded.num_heads), params)
    steps = layer_steps(loaded, run, layer, head)
    q, labels, d_k = query_position(run.tokens, params), _labels(run.tokens), steps.q.shape[1]
    keys = axis_labels(run.tokens)  # the tokens alone along the top: "2: animal" turned upright took a projector's room
    rows = {"scores": steps.scores[q], "scaled": steps.scaled[q], "weights": steps.weights[q]}
    shown = _one_of(params, "show", QUERY_PARTS)
    where = f"layer {layer + 1}, head {head + 1}, query {labels[q]}"
    contributions = steps.weights[q][:, None] * steps.v  # (T, d_k): weight of key j times its value vector
    if shown == "sum":
        figure = matrix_heatmap(contributions, f"Each key's weight × v, {where}", row_labels=labels,
                                row_title="key", col_title="dimension of v")
        out = matrix_heatmap(steps.head_output[q], f"Their sum: the head's output for {labels[q]}",
                             row_labels=[labels[q]], col_title="dimension of v")
        figures = [figure, out]
    else:
        names = [n for n in list(QUERY_PARTS)[: list(QUERY_PARTS).index(shown) + 1] if n != "weights"]
        figures = [matrix_heatmap(np.stack([rows[n] for n in names]), f"Query {labels[q]} against every key, "
                                  f"layer {layer + 1}, head {head + 1}", row_labels=[QUERY_PARTS[n] for n in names],
                                  col_labels=keys, row_title="step", col_title="key", value_name="score")]
        if shown == "weights":
            figures.append(matrix_heatmap(rows["weights"], f"softmax: {labels[q]}'s attention weights",
                                          row_labels=[labels[q]], col_labels=keys, row_title="query",
                                          col_title="key", value_name="weight", scale=ATTENTION))
    norms = np.linalg.norm(contributions, axis=1)
    return View(
        figures=figures,
        caption=f"d_k = {d_k}, √d_k = {np.sqrt(d_k):.2f}. Recomputed from the weights; largest difference from "
                f"the model's own weights: {steps.attention_diff:.1e}.",
        series={"scores": Series(labels, rows["scores"], "‘{label}’ has the largest q·k, {value:.2f}"),
                "weights": Series(labels, rows["weights"], f"head {head + 1} of layer {layer + 1} gives {{value:.2f}}"
                                  f" of the attention of ‘{labels[q]}’ to ‘{{label}}’"),
                "contributions": Series(labels, norms, "‘{label}’ has the longest weighted value vector, "
                                        "‖w·v‖ = {value:.2f}")},
        numbers={"d_k": Number(float(d_k), "each head has d_k = d / heads = {value:g} dimensions"),
                 "weight_sum": Number(float(rows["weights"].sum()), "the weights sum to {value:.4f}")})


def scaling(source: Source, text: str, params: Mapping) -> View:
    from vizcore.inside.demos import scaling_demo
    from vizcore.inside.figures import softmax_bars

    demo = scaling_demo(int(params["d_k"]))
    figure = softmax_bars(demo.unscaled_weights, demo.scaled_weights, demo.unscaled_entropy, demo.scaled_entropy,
                          demo.d_k)
    says = "the softmax {label} has entropy {value:.2f} bits (lower = more peaked)"
    return View(figures=[figure],
                caption=f"Var(q·k) over {demo.samples:,} random pairs: {demo.variance_unscaled:,.1f} (theory d_k = "
                        f"{demo.d_k}); after ÷√d_k: {demo.variance_scaled:.2f} (theory 1).",
                series={"entropy": Series(["without ÷√d_k", "with ÷√d_k"],
                                          np.array([demo.unscaled_entropy, demo.scaled_entropy]), says)},
                numbers={"variance": Number(demo.variance_unscaled, "Var(q·k) measured: {value:,.1f}")})


# ---- lesson 2: many heads (vizcore.attention.head_stats) ------------------------------------------------------

def head_grid(source: Source, text: str, params: Mapping) -> View:
    from vizcore.attention.head_stats import LABELS, head_statistics
    from vizcore.plot import layer_head_heatmap

    run = source.run(text)
    name = str(params["stat"])
    if name not in LABELS:
        raise VizError(f"Unknown head statistic '{name}': one of {', '.join(LABELS)}.")
    stats = head_statistics(run.attention, run.tokens, run.special_mask)[name]  # [layer, head]
    layers, heads = stats.shape
    labels = [f"layer {l + 1}, head {h + 1}" for l in range(layers) for h in range(heads)]
    figure = layer_head_heatmap(stats, f"{LABELS[name]}, every head", LABELS[name], scale=SEQUENTIAL)
    best = np.unravel_index(np.argmax(stats), stats.shape)
    pattern = _attention_figure(run, int(best[0]), int(best[1]), f" (the largest {LABELS[name]})")
    return View(figures=[figure, pattern], caption=special_finding(run, name, stats),
                series={"heads": Series(labels, stats.ravel(), "{label} has the largest " + LABELS[name] +
                                        ", {value:.2f}")})


def special_finding(run: Run, name: str, stats: np.ndarray) -> str:
    """For the [CLS] and [SEP] statistics, what this model does on this sentence, worded by the numbers and with the
    special token named as the model has it (MPNet's are <s> and </s>): the lesson's claim about BERT is the paper's;
    this is the model on screen's (issue 47 B)."""
    if name not in ("cls", "sep"):
        return ""
    token = run.tokens[0] if name == "cls" else run.tokens[-1]  # the first and the closing special token
    layer, head = np.unravel_index(np.argmax(stats), stats.shape)
    top = float(stats[layer, head])
    most = int((stats > 0.5).sum())
    where = f"layer {layer + 1}, head {head + 1}"
    if most == 0:
        return (f"**In this model ({run.model}), on this sentence, no head puts most of its weight on {token}**: at "
                f"most {top:.0%} ({where}), from each query on average.")
    return (f"**In this model ({run.model}), on this sentence, {most} of {stats.size} heads put most of their weight "
            f"on {token}**; the most, {where}: {top:.0%} from each query on average.")


def _attention_figure(run: Run, layer: int, head: int, note: str = ""):
    from vizcore.plot import attention_heatmap

    return attention_heatmap(run.attention[layer, head], run.tokens,
                             title=f"Layer {layer + 1}, head {head + 1}{note}", query_segments=run.segment_ids,
                             key_segments=run.segment_ids)


def attention_map(source: Source, text: str, params: Mapping) -> View:
    run = source.run(text)
    layer, head = _layer_head(run.attention.shape, params)
    q, labels = query_position(run.tokens, params), _labels(run.tokens)
    row = run.attention[layer, head, q]
    later = float(np.triu(run.attention[layer, head], k=1).sum(-1).max())
    return View(figures=[_attention_figure(run, layer, head)],
                series={"row": Series(labels, row, f"layer {layer + 1}, head {head + 1} gives {{value:.2f}} of "
                                      f"the attention of ‘{labels[q]}’ to ‘{{label}}’")},
                numbers={"later": Number(later, "a query gives up to {value:.2f} of its attention to later keys")})


# ---- lesson 3: masks (vizcore.inside.demos) --------------------------------------------------------------------

def padding(source: Source, text: str, params: Mapping) -> View:
    from vizcore.inside.demos import padding_demo

    loaded = source.model()
    layer, head = _layer_head((loaded.num_layers, loaded.num_heads), params)
    demo = padding_demo(loaded, text, str(params["other"]), layer, head)
    tokens = demo.tokens[demo.short]
    labels = _labels(tokens)
    from vizcore.plot import attention_heatmap

    figure = attention_heatmap(demo.weights, tokens, title=f"The shorter sentence in a padded batch, layer "
                               f"{layer + 1}, head {head + 1}")
    n_pad = int((demo.attention_mask[demo.short] == 0).sum())
    return View(figures=[figure],
                caption=f"{n_pad} [PAD] keys; real tokens differ from the sentence run alone by at most "
                        f"{demo.max_diff_vs_alone:.1e}.",
                series={"pad_column": Series(labels, demo.weights.sum(0), "{label} receives {value:.2f} in total")},
                numbers={"on_padding": Number(demo.max_on_padding, "the largest weight on any [PAD] key, all layers "
                                              "and heads, is {value:.1e}")})


def causal(source: Source, text: str, params: Mapping) -> View:
    from vizcore.inside.demos import causal_weights, weight_above_diagonal
    from vizcore.inside.steps import layer_steps
    from vizcore.plot import attention_heatmap

    loaded, run = source.model(), source.run(text, hidden=True)
    layer, head = _layer_head((loaded.num_layers, loaded.num_heads), params)
    steps = layer_steps(loaded, run, layer, head)
    masked = causal_weights(steps.scaled)
    labels = _labels(run.tokens)
    figure = attention_heatmap(masked, run.tokens, title=f"Causal mask on layer {layer + 1}, head {head + 1}")
    return View(figures=[attention_heatmap(steps.weights, run.tokens, title="Bidirectional, as BERT is"), figure],
                series={"first_row": Series(labels, masked[0], "under the causal mask the first token gives "
                                            "{value:.2f} to {label}")},
                numbers={"later_masked": Number(weight_above_diagonal(masked), "with the mask the largest weight "
                                                "on a later key is {value:.1e}"),
                         "later_bidirectional": Number(weight_above_diagonal(steps.weights), "without it a query "
                                                       "gives up to {value:.2f} to one later key")})


# ---- lesson 4: positions (vizcore.inside.demos, vizcore.positional) ----------------------------------------------

def word_order(source: Source, text: str, params: Mapping) -> View:
    from vizcore.inside.demos import permutation_demo
    from vizcore.inside.figures import change_bars

    run = source.run(text, hidden=True)
    demo = permutation_demo(source.model(), run, int(params["seed"]))
    shuffled = [run.tokens[i] for i in demo.order]
    return View(figures=[change_bars(shuffled, demo.change_without, demo.change_with)],
                caption="Shuffled: `" + " ".join(shuffled).replace("`", "'") + "`",
                numbers={"without": Number(demo.diff_without_positions, "without position embeddings the outputs "
                                           "differ from the shuffled originals by at most {value:.1e}"),
                         "with": Number(demo.diff_with_positions, "with them, by up to {value:.2f}")})


def sinusoids(source: Source, text: str, params: Mapping) -> View:
    from vizcore.plot import matrix_heatmap
    from vizcore.positional.encoding import check_offset, similarity, sinusoidal_encoding
    from vizcore.positional.figures import waves_figure

    positions, d, k = int(params["positions"]), int(params["d_model"]), int(params["offset"])
    table = sinusoidal_encoding(positions, d)
    check = check_offset(table, k)
    sim = similarity(table, "dot")
    labels = [str(p) for p in range(positions)]
    return View(figures=[waves_figure(table, [0, 1, 4, 10]),
                         matrix_heatmap(sim, "PE(p) · PE(q)", row_labels=labels, col_labels=labels, row_title="p",
                                        col_title="q", value_name="dot product", scale=SEQUENTIAL)],
                series={"similarity": Series(labels[1:], sim[0, 1:], "position {label} is the closest to position 0"
                                             ", PE·PE = {value:.2f}")},
                numbers={"offset_error": Number(check.max_abs_error, f"one fixed rotation M_{k} maps every PE(p) to "
                                                f"PE(p + {k}) within {{value:.1e}} ({check.pairs} pairs)")})


def learned_positions(source: Source, text: str, params: Mapping) -> View:
    from vizcore.plot import matrix_heatmap
    from vizcore.positional.encoding import learned_positions as table_of
    from vizcore.positional.encoding import similarity

    learned = table_of(source.model(), int(params["positions"]))
    sim = similarity(learned.table, "cosine")
    p = int(params["position"])
    if not 0 <= p < len(sim):
        raise VizError(f"Position {p} is not among the {len(sim)} positions shown.")
    labels = [str(i) for i in range(len(sim))]
    others = [i for i in range(len(sim)) if i != p]
    return View(figures=[matrix_heatmap(sim, f"{learned.model}: cosine similarity of learned positions",
                                        row_labels=labels, col_labels=labels, row_title="position",
                                        col_title="position", value_name="cosine", scale=SEQUENTIAL)],
                series={"near": Series([labels[i] for i in others], sim[p, others], f"position {{label}} is the "
                                       f"most similar to position {p}, cosine {{value:.2f}}")})


# ---- lesson 5: the encoder block (vizcore.inside.steps, vizcore.model.parameters) --------------------------------

BLOCK_PARTS = {"x": "X, the layer's input", "projected": "attention output (Concat · W_O)",
               "attn_norm": "LayerNorm(X + attention output)", "ffn_hidden": "feed-forward hidden units",
               "output": "the layer's output"}


def block_part(source: Source, text: str, params: Mapping) -> View:
    from vizcore.inside.steps import layer_steps
    from vizcore.plot import matrix_heatmap

    loaded, run = source.model(), source.run(text, hidden=True)
    layer, _ = _layer_head((loaded.num_layers, loaded.num_heads), {"layer": params["layer"], "head": 1})
    steps = layer_steps(loaded, run, layer, 0)
    part = _one_of(params, "part", BLOCK_PARTS)
    matrix = getattr(steps, part)
    labels = _labels(run.tokens)
    x_norm, attn_norm = np.linalg.norm(steps.x, axis=1), np.linalg.norm(steps.projected, axis=1)
    return View(figures=[matrix_heatmap(matrix, f"Layer {layer + 1}: {BLOCK_PARTS[part]}", row_labels=labels,
                                        row_title="token", col_title="dimension")],
                caption=f"Largest difference from the model's own output of layer {layer + 1}: "
                        f"{steps.output_diff:.1e}.",
                series={"residual_share": Series(labels, attn_norm / (x_norm + attn_norm),
                                                 "{label}'s attention output is {value:.0%} of ‖X‖ + ‖attention‖")},
                numbers={"ffn_width": Number(float(steps.ffn_hidden.shape[1]), "the feed-forward layer has {value:g} "
                                             f"hidden units for d = {steps.x.shape[1]}"),
                         "mean_share": Number(float((attn_norm / (x_norm + attn_norm)).mean()),
                                              "on average the attention output is {value:.0%} of the sum's parts")})


def parameters(source: Source, text: str, params: Mapping) -> View:
    from vizcore.lessons.figures import parameter_bars
    from vizcore.model.parameters import parameter_counts

    loaded = source.model()
    counts = parameter_counts(loaded.model)
    total = sum(counts.values())
    return View(figures=[parameter_bars(counts, f"{loaded.name}: {total:,} parameters")],
                series={"components": Series(list(counts), np.array(list(counts.values()), dtype=float),
                                             "{label} holds the most parameters, {value:,.0f}")},
                numbers={"total": Number(float(total), "{value:,.0f} parameters in all")})


def _unique(labels: list[str]) -> list[str]:
    """Labels made unique by their rank where two read the same (two decoded tokens may)."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


# ---- lesson 6: pre-training (vizcore.mlm: the offline masked-LM and next-sentence models) ------------------------

def masking(source: Source, text: str, params: Mapping) -> View:
    from vizcore.mlm.figures import masking_tokens, rates_bars
    from vizcore.mlm.masking_demo import draw_masking, measure_rates
    from vizcore.model.catalog import fill_mask_model

    tokenizer = source.model("mlm", fill_mask_model()).tokenizer
    sentence = str(params["sentence"]) or text
    draw = draw_masking(tokenizer, sentence, int(params["seed"]))
    rates = measure_rates(tokenizer, sentence, int(params["draws"]), 0)
    rows = rates.rows()
    return View(figures=[masking_tokens(draw, "One draw of the 15 % rule"),
                         rates_bars(rates, f"What {rates.draws:,} draws did")],
                numbers={"selected": Number(rows[0]["measured"], "{value:.1%} of the ordinary tokens were chosen"),
                         "masked": Number(rows[1]["measured"], "{value:.1%} of the chosen became [MASK]")})


def fill(source: Source, text: str, params: Mapping) -> View:
    from vizcore.mlm.figures import prediction_bars
    from vizcore.mlm.fill_mask import fill_mask
    from vizcore.model.catalog import fill_mask_model

    answering = fill_mask_model()
    result = fill_mask(source.model("mlm", answering), text, top_k=int(params["top_k"]), lenses=False)
    predictions = result.masks[0].predictions
    labels = _unique([p.token for p in predictions])
    return View(figures=[prediction_bars(predictions, "The masked-LM's guesses for the first [MASK]")],
                caption=f"Answered by {answering}, the masked-LM this app fills blanks with.",
                series={"guesses": Series(labels, np.array([p.score for p in predictions]),
                                          "the model's top word is '{label}', probability {value:.2f}")})


def next_sentence(source: Source, text: str, params: Mapping) -> View:
    from vizcore.mlm.figures import cls_share_heatmaps, is_next_gauge
    from vizcore.mlm.nsp import next_sentence as predict
    from vizcore.model.catalog import NSP_MODEL

    result = predict(source.model("nsp", NSP_MODEL), str(params["first"]), str(params["second"]))
    return View(figures=[is_next_gauge(result.is_next, "P(B follows A)"),
                         cls_share_heatmaps(result, "Where [CLS] looks: sentence A, sentence B, special tokens")],
                caption=f"A: {params['first']} · B: {params['second']}",
                numbers={"is_next": Number(result.is_next, "the model gives P(IsNext) = {value:.2f}")})


# ---- lesson 7: fine-tuning (vizcore.finetune: a short live run, and the shipped MLM-tuned MiniLM) ------------------

CHANGE_SENTENCES = ("The cat sat on the mat.", "Paris is the capital of France.",
                    "She drank a cup of coffee every morning.", "The animal didn't cross the street because it was "
                    "too tired.")


def tiny_training(source: Source, text: str, params: Mapping) -> View:
    from vizcore.finetune.figures import tiny_accuracy_curve, tiny_attention_grid
    from vizcore.finetune.tiny import TinyConfig, anti_diagonal_mass, example_digits, train_tiny

    config = TinyConfig(task=str(params["task"]), steps=int(params["steps"])).validate()
    result = train_tiny(config)
    step, maps = result.history.snapshots[-1]  # [layer, head, query, key] on the example digits
    labels = [f"layer {l + 1}, head {h + 1}" for l in range(maps.shape[0]) for h in range(maps.shape[1])]
    mirror = np.array([anti_diagonal_mass(maps[l, h]) for l in range(maps.shape[0]) for h in range(maps.shape[1])])
    return View(figures=[tiny_accuracy_curve(result.history.steps, config.steps),
                         tiny_attention_grid(maps, example_digits(config), step)],
                caption=f"Trained here, now: {config.steps} steps in {result.seconds:.1f} s.",
                series={"mirror": Series(labels, mirror, "{label} puts {value:.2f} of its attention on the mirrored "
                                         "position")},
                numbers={"accuracy": Number(result.token_accuracy, "after training, {value:.0%} of the output "
                                            "digits are right")})


def head_change(source: Source, text: str, params: Mapping) -> View:
    from vizcore.finetune.analysis import attention_change
    from vizcore.finetune.figures import head_change_heatmap
    from vizcore.model.catalog import DEFAULT_MODEL, MLM_MODEL

    before, after = source.model("base", DEFAULT_MODEL), source.model("mlm", MLM_MODEL)
    change = attention_change(before, after, (text, *CHANGE_SENTENCES))
    js = change.js.astype(np.float64)  # [layer, head]
    labels = [f"layer {l + 1}, head {h + 1}" for l in range(js.shape[0]) for h in range(js.shape[1])]
    half = js.shape[0] // 2
    return View(figures=[head_change_heatmap(js, "JS divergence (bits)", f"How far each head's attention moved: "
                                             f"{before.name} → {after.name}")],
                caption=f"Averaged over {change.sentences} sentences (the lesson's first).",
                series={"heads": Series(labels, js.ravel(), "{label} changed most: {value:.2f} bits")},
                numbers={"late_minus_early": Number(float(js[half:].mean() - js[:half].mean()),
                                                    "the later layers moved {value:+.3f} bits more than the earlier")})


# ---- lesson 8: the decoder (vizcore.decoder: the offline causal model) ------------------------------------------

def next_token(source: Source, text: str, params: Mapping) -> View:
    from vizcore.decoder.figures import causal_mask_heatmap, next_token_bars, shown
    from vizcore.decoder.sampling import Settings
    from vizcore.decoder.steps import candidates, step_view
    from vizcore.model.catalog import CAUSAL_MODEL

    loaded = source.model("causal-lm", CAUSAL_MODEL)
    settings = Settings(temperature=float(params["temperature"]), top_k=int(params["top_k"])).check()
    view = step_view(loaded, text, settings=settings)
    found = candidates(loaded, view, count=10)
    labels = _unique([shown(t) for t in found.tokens])
    layer, head = _layer_head(view.attention.shape, params)
    figures = [next_token_bars(found, settings, f"The next token after '{text}', temperature {settings.temperature:g}"),
               causal_mask_heatmap(view.attention[layer, head], view.tokens,
                                   f"{loaded.name}: its own causal attention, layer {layer + 1}, head {head + 1}")]
    later = float(np.triu(view.attention, k=1).max())
    return View(figures=figures,
                series={"plain": Series(labels, found.plain, "the model's most probable next token is '{label}', "
                                        "{value:.2f}")},
                numbers={"top_change": Number(float(found.shaped[0] - found.plain[0]), "the top token's probability "
                                              "changes by {value:+.2f} from the model's own"),
                         "kept": Number(float(found.kept), "{value:g} tokens can still be drawn"),
                         "later": Number(later, "the largest weight on a later token, every head, is {value:.1e}")})


# ---- lesson 9: the whole Transformer (vizcore.seq2seq: the date translator) ---------------------------------------

TRANSLATION_PARTS = ("encoder", "cross", "alignment")


def translation(source: Source, text: str, params: Mapping) -> View:
    from vizcore.seq2seq.alignment import alignment_accuracy
    from vizcore.seq2seq.figures import alignment_accuracy_heatmap, cross_attention_heatmap, encoder_attention_heatmap
    from vizcore.seq2seq.translator import translate

    result = translate(text)
    run = result.run
    layer, head = _layer_head(run.cross.shape, params)
    shown = _one_of(params, "show", TRANSLATION_PARTS)
    inputs, row = _labels(run.input_tokens), min(int(params["output"]) - 1, len(run.output_tokens) - 1)
    figures = {"cross": lambda: cross_attention_heatmap(run, layer, head),
               "encoder": lambda: encoder_attention_heatmap(run, layer, head)}
    series = {"cross_row": Series(inputs, run.cross[layer, head, row], f"writing '{run.output_tokens[row]}', "
                                  f"layer {layer + 1} head {head + 1} looks most at {{label}}, {{value:.2f}}")}
    if run.gold is not None:
        accuracy = alignment_accuracy(run.cross, run.gold)
        names = [f"layer {l + 1}, head {h + 1}" for l in range(accuracy.shape[0]) for h in range(accuracy.shape[1])]
        series["heads"] = Series(names, np.nan_to_num(accuracy.ravel()), "{label} aligns best: {value:.0%} of the "
                                 "output characters look most at their input word")
        figures["alignment"] = lambda: alignment_accuracy_heatmap(accuracy)
    if shown not in figures:
        raise VizError(f"This sentence gives no {shown} view: type a date in words, like the lesson's.")
    return View(figures=[figures[shown]()], caption=f"`{run.text}` → `{''.join(run.output_tokens)}`",
                series=series)


# ---- lesson 10: what attention weights do not tell you (vizcore.why) ----------------------------------------------

def ablation(source: Source, text: str, params: Mapping) -> View:
    from vizcore.model.catalog import fill_mask_model
    from vizcore.why.ablation import ablate_mlm
    from vizcore.why.figures import before_after_bars

    loaded = source.model("mlm", fill_mask_model())
    layer, head = _layer_head((loaded.num_layers, loaded.num_heads), params)
    result = ablate_mlm(loaded, text, [(layer, head)])
    effect = result.masks[0]
    top = effect.compared[0]
    mask_row = result.attention_before[layer, head, effect.index]
    labels = _labels(result.tokens)
    return View(figures=[before_after_bars(effect.compared, f"Layer {layer + 1}, head {head + 1} switched off")],
                series={"attention": Series(labels, mask_row, f"[MASK] in layer {layer + 1}, head {head + 1} looks "
                                            "most at {label}, {value:.2f}")},
                numbers={"drop": Number(top[1] - top[2], f"'{top[0]}' goes from {top[1]:.2f} to {top[2]:.2f}: a drop "
                                        "of {value:.2f}"),
                         "same_top": Number(float(effect.baseline[0].token == effect.ablated[0].token),
                                            f"the top word is '{effect.baseline[0].token}' with the head, "
                                            f"'{effect.ablated[0].token}' without")})


def attribution(source: Source, text: str, params: Mapping) -> View:
    from vizcore.model.catalog import fill_mask_model
    from vizcore.why.attribution import METHODS, answer_target, attribute
    from vizcore.why.figures import attribution_bars

    target = answer_target(source.model("mlm", fill_mask_model()), text)
    result = attribute(target, methods=("occlusion", "rollout"))
    labels = _labels(result.tokens)
    ordinary = np.asarray(result.ordinary, dtype=bool)
    keep = [i for i in range(len(labels)) if ordinary[i]]
    series = {method: Series([labels[i] for i in keep], result.scores[method][keep],
                             f"by {METHODS[method].lower()}, {{label}} matters most for "
                             f"'{result.token}': {{value:.3f}}")
              for method in ("occlusion", "rollout")}
    return View(figures=[attribution_bars(result.tokens, {METHODS[m]: result.scores[m] for m in series})],
                caption=f"f = P('{result.token}' at the mask) = {result.score:.2f}.", series=series)


KINDS: dict[str, Kind] = {
    "query_steps": Kind(query_steps, {"layer": 1, "head": 1, "show": "weights", "query": ""},
                        ("scores", "weights", "contributions"), ("d_k", "weight_sum"), query=True,
                        choices={"show": tuple(QUERY_PARTS)}),
    "scaling": Kind(scaling, {"d_k": 64}, ("entropy",), ("variance",)),
    "head_grid": Kind(head_grid, {"stat": "previous"}, ("heads",)),
    "attention_map": Kind(attention_map, {"layer": 1, "head": 1, "query": ""}, ("row",), ("later",), query=True),
    "padding": Kind(padding, {"layer": 1, "head": 1, "other": "It was tired."}, ("pad_column",), ("on_padding",)),
    "causal": Kind(causal, {"layer": 1, "head": 1}, ("first_row",), ("later_masked", "later_bidirectional")),
    "word_order": Kind(word_order, {"seed": 0}, (), ("without", "with")),
    "sinusoids": Kind(sinusoids, {"positions": 50, "d_model": 64, "offset": 5}, ("similarity",), ("offset_error",)),
    "learned_positions": Kind(learned_positions, {"positions": 40, "position": 10}, ("near",)),
    "block_part": Kind(block_part, {"layer": 1, "part": "output"}, ("residual_share",), ("ffn_width", "mean_share"),
                       choices={"part": tuple(BLOCK_PARTS)}),
    "parameters": Kind(parameters, {}, ("components",), ("total",)),
    "masking": Kind(masking, {"seed": 0, "draws": 2000, "sentence": ""}, (), ("selected", "masked")),
    "fill_mask": Kind(fill, {"top_k": 5}, ("guesses",)),
    "next_sentence": Kind(next_sentence, {"first": "", "second": ""}, (), ("is_next",)),
    "tiny_training": Kind(tiny_training, {"task": "reverse", "steps": 100}, ("mirror",), ("accuracy",)),
    "head_change": Kind(head_change, {}, ("heads",), ("late_minus_early",)),
    "next_token": Kind(next_token, {"temperature": 1.0, "top_k": 0, "layer": 1, "head": 1}, ("plain",),
                       ("top_change", "kept", "later")),
    "translation": Kind(translation, {"show": "cross", "layer": 1, "head": 1, "output": 1}, ("cross_row", "heads"),
                        choices={"show": TRANSLATION_PARTS}),
    "ablation": Kind(ablation, {"layer": 1, "head": 1}, ("attention",), ("drop", "same_top")),
    "attribution": Kind(attribution, {}, ("occlusion", "rollout")),
}
