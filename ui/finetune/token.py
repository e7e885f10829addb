"""The Fine-tuning lab's token classification (NER): data (spaCy's silver labels for training and the
hand-checked held-out sentences, or a CoNLL upload) and results (entity scores per type, the -100
word-piece alignment, held-out sentences as coloured spans, every sentence with mistakes first, try your
own). Computation: vizcore/finetune/tokens.py, entities.py, token_task.py, token_figures.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ui.feedback import CHART
from ui.layout import for_screen
from vizcore.errors import VizError
from vizcore.finetune.analysis import token_map
from vizcore.finetune.entities import entity_scores, scores_table
from vizcore.finetune.figures import pca_scatter
from vizcore.finetune.tasks import pad_id_of
from vizcore.finetune.token_figures import (
    alignment_html,
    entity_html,
    legend_html,
    tag_probability_heatmap,
    type_colours,
    type_scores_chart,
)
from vizcore.finetune.token_task import TOKEN, example_records, predict_entities, predict_tags, word_probabilities
from vizcore.finetune.tokens import (
    IGNORE,
    MAX_BYTES,
    TaggedData,
    alignment_table,
    builtin_token_data,
    header_comments,
    join_words,
    o_share,
    tagged_text,
    uploaded_token_data,
)
from vizcore.finetune.training import FinetuneResult

KEY = "finetune.token."
BUILTIN = "Built-in: silver training set + hand-checked held-out set"
UPLOAD = "Upload a CoNLL file"
TRY_TEXT = ("Marie Curie left Warsaw for Paris, where she taught at the Sorbonne and won two Nobel Prizes "
            "before the First World War.")
ATTENTION_SENTENCES = 60  # held-out sentences whose attention is compared before and after
MAP_SENTENCES = 40  # held-out sentences whose word vectors are projected before and after
O_COLOUR = "#9ca3af"


@st.cache_data(show_spinner=False, max_entries=1)
def get_builtin_token_data() -> TaggedData:
    return builtin_token_data()


@st.cache_data(show_spinner="Reading the CoNLL file…", max_entries=4)
def get_uploaded_token_data(train: bytes, name: str, test: bytes | None, test_name: str | None) -> TaggedData:
    return uploaded_token_data(train, name, test, test_name)


def data_section() -> TaggedData | None:
    """The built-in sets or an upload, with counts per type; None (after a message) when unusable."""
    source = st.radio("Data", [BUILTIN, UPLOAD], horizontal=True, key=KEY + "source")
    if source == BUILTIN:
        data = get_builtin_token_data()
        made, *how = header_comments()  # the silver file says how its tags were made
        st.info(f"**The training labels are silver, not gold:** {made.removeprefix('SILVER LABELS: ')} The held-out "
                "sentences were written and tagged by hand for this project. " + " ".join(how))
    else:
        data = _uploaded()
        if data is None:
            return None
    st.markdown(f"**{len(data.train):,} training sentences** ({data.train.word_count():,} words) and "
                f"**{len(data.test):,} held-out** ({data.test.word_count():,} words); held out: {data.split_note}.")
    train, test = data.train.counts(), data.test.counts()
    st.dataframe(pd.DataFrame({"entity type": list(train), "training entities": list(train.values()),
                               "held-out entities": [test.get(t, 0) for t in train]}),
                 hide_index=True, key=KEY + "counts")
    repaired = data.train.repaired + data.test.repaired
    if repaired:
        st.info(f"{repaired} entities started with I- (IOB1 or loose BIO) and were changed to B-; every entity is "
                "what the CoNLL rule reads from the file.")
    return data


def _uploaded() -> TaggedData | None:
    upload = st.file_uploader(
        f"CoNLL file: one word and its tag per line (tab or space between; the tag is the last column, BIO: "
        f"O, B-TYPE, I-TYPE), a blank line between sentences, UTF-8, at most {MAX_BYTES // 1_000_000} MB",
        type=["conll", "txt", "tsv", "iob", "bio"], key=KEY + "upload")
    held = st.file_uploader("Held-out file (optional; without one, every fifth sentence is held out)",
                            type=["conll", "txt", "tsv", "iob", "bio"], key=KEY + "upload_test")
    if upload is None:
        st.info("Upload a CoNLL file to continue, or pick the built-in sets.")
        return None
    try:
        return get_uploaded_token_data(upload.getvalue(), upload.name, None if held is None else held.getvalue(),
                                       None if held is None else held.name)
    except VizError as error:
        st.error(str(error))
        return None


def attention_inputs(data: TaggedData) -> tuple[list[str], None]:
    """Held-out sentences as text, for the lab's before/after attention view."""
    return [join_words(words)[0] for words in data.test.words[:ATTENTION_SENTENCES]], None


def results_section(result: FinetuneResult, data: TaggedData) -> None:
    predicted = _predictions(result, data)
    colours = type_colours(data.train.types)
    _scores(result, data, predicted)
    _alignment(result, data, colours)
    _held_out_sentence(data, predicted, colours)
    _examples(data, predicted)
    _try(result, colours)


def vectors_section(job, after) -> None:
    """Where the held-out words sit: each word's vector (its first piece, last layer) before and after
    fine-tuning, projected on its first two principal components and coloured by its gold entity type."""
    test = job.data.test.subset(range(min(MAP_SENTENCES, len(job.data.test))))
    kept = st.session_state.get(KEY + "vectors")
    if kept is None or kept[0] is not job.result:
        loaded = job.loaded
        batch = TOKEN.collate(TOKEN.encode(loaded.tokenizer, test, job.config.max_length),
                              pad_id_of(loaded.tokenizer), loaded.device, loaded.model)
        chosen = batch.targets != IGNORE  # (B, T): each word's first piece
        types = ("O", *test.types)
        labels = np.array([types.index(test.tag_names[t][2:]) if t else 0 for t in batch.targets[chosen].tolist()])
        counts = chosen.sum(1).tolist()
        words = tuple(f"{word} · {join_words(test.words[i])[0][:80]}"
                      for i, count in enumerate(counts) for word in test.words[i][:count])
        with st.spinner("Projecting the held-out words' vectors…"):
            kept = (job.result, token_map(loaded, after, batch.inputs, chosen, labels), labels, types, words)
        st.session_state[KEY + "vectors"] = kept
    _, emap, labels, types, words = kept
    colours = (O_COLOUR, *type_colours(types[1:]).values())
    st.subheader("Where the held-out words sit")
    figure = pca_scatter(emap.before, emap.after, labels, types, words,
                         (emap.explained_before, emap.explained_after),
                         f"Word vectors of {len(test)} held-out sentences (PCA), coloured by gold entity type",
                         "gold type", colours)
    st.plotly_chart(for_screen(figure), key=KEY + "pca", config=CHART)
    st.caption(f"Each dot is one word of a held-out sentence: the last layer's vector at its first piece (what "
               f"the tagger reads), projected on its own first two principal components. Type separation "
               f"(between-type over within-type spread in the full space): {emap.separation_before:.2f} before, "
               f"{emap.separation_after:.2f} after.")


def _predictions(result: FinetuneResult, data: TaggedData) -> list[list[str]]:
    """The fine-tuned model's tags for every held-out sentence, once per finished run (kept in this
    session beside its model copy)."""
    key = KEY + "predictions"
    kept = st.session_state.get(key)
    if kept is None or kept[0] is not result:
        with st.spinner("Tagging the held-out sentences…"):
            kept = (result, predict_tags(result.model, result.tokenizer, data.test.words, result.config.max_length,
                                         data.train.tag_names))
        st.session_state[key] = kept
    return kept[1]


def _scores(result: FinetuneResult, data: TaggedData, predicted: list[list[str]]) -> None:
    st.subheader("Entities found in the held-out sentences")
    scores = entity_scores([data.test.tag_strings(i) for i in range(len(data.test))], predicted)
    st.dataframe(scores_table(scores), hide_index=True, key=KEY + "scores", column_config={
        name: st.column_config.NumberColumn(name, format="%.3f") for name in ("precision", "recall", "F1")})
    left, right = st.columns([3, 2])
    left.plotly_chart(for_screen(type_scores_chart(scores)), key=KEY + "scores_chart", config=CHART)
    first = result.history.evals[0]
    right.caption(
        "An entity counts as found only when its words and its type are both exactly right. Precision: the share "
        "of predicted entities that are right; recall: the share of true entities found; support: true entities. "
        f"Before training (step 0) the untrained head scored entity F1 {first['entity_f1']:.3f}; tagging every "
        f"word O scores 0 (it finds nothing) although {o_share(data.test):.1%} of the words are O.")


def _alignment(result: FinetuneResult, data: TaggedData, colours: dict[str, str]) -> None:
    st.subheader("Words become pieces: only each word's first piece is labelled")
    test = data.test
    index = st.selectbox("Held-out sentence", range(len(test)), key=KEY + "aligned",
                         format_func=lambda i: join_words(test.words[i])[0][:120])
    table = alignment_table(result.tokenizer, test.words[index], test.tag_strings(index), data.train.tag_names,
                            result.config.max_length)
    st.html(alignment_html(table, colours))
    labelled = int((table["label id"] != -100).sum())
    st.caption(f"{len(table)} pieces for {len(test.words[index])} words: {labelled} first pieces carry their word's "
               f"tag, the other {len(table) - labelled} (later pieces of a word, [CLS], [SEP]) get -100, which the "
               "loss skips. A word's prediction is read at its first piece.")
    with st.expander("The alignment as a table"):
        st.dataframe(table, hide_index=True, key=KEY + "alignment_table")


def _held_out_sentence(data: TaggedData, predicted: list[list[str]], colours: dict[str, str]) -> None:
    st.subheader("Gold and predicted entities")
    st.html(legend_html(colours))
    test = data.test
    mistakes = [i for i in range(len(test)) if test.tag_strings(i) != predicted[i]]
    index = st.selectbox(f"Held-out sentence ({len(mistakes)} of {len(test)} have a wrong tag; those first)",
                         mistakes + [i for i in range(len(test)) if i not in mistakes], key=KEY + "shown",
                         format_func=lambda i: join_words(test.words[i])[0][:120])
    for label, tags in (("Gold (hand-checked)" if data.source == "builtin" else "Gold", test.tag_strings(index)),
                        ("Predicted", predicted[index])):
        st.markdown(f"**{label}**")
        st.html(entity_html(*tagged_text(test.words[index], tags), colours))


def _examples(data: TaggedData, predicted: list[list[str]]) -> None:
    st.subheader("Every held-out sentence")
    table = pd.DataFrame(example_records(data.test, predicted))
    table = table.sort_values("mistakes", ascending=False, kind="stable")
    wrong = int((table["mistakes"] > 0).sum())
    if st.checkbox(f"Only the {wrong} sentences with a mistake", key=KEY + "only_wrong"):
        table = table[table["mistakes"] > 0]
    st.dataframe(table, hide_index=True, width="stretch", key=KEY + "examples", column_config={
        "sentence": st.column_config.TextColumn("sentence", width="large"),
        "mistakes": st.column_config.NumberColumn("mistakes", help="entities missed + entities predicted wrongly"),
    })


def _try(result: FinetuneResult, colours: dict[str, str]) -> None:
    st.subheader("Try your own text")
    text = st.text_area("Text", TRY_TEXT, key=KEY + "try", height=90)
    try:
        words, tags, found = predict_entities(result.model, result.tokenizer, text, result.label_names,
                                              result.config.max_length)
    except VizError as error:
        st.warning(str(error))
        return
    if not words:
        st.info("Type a sentence to tag.")
        return
    st.html(legend_html(colours))
    st.html(entity_html(text, [(f.start, f.end, f.kind) for f in found], colours))
    st.caption("The text is split into words as the held-out file is: punctuation and a possessive 's apart, "
               "hyphenated words whole, titles such as Dr. with their full stop. "
               + (f"{len(found)} entities found." if found else "No entity found."))
    if found:
        st.dataframe(pd.DataFrame([{"entity": f.text, "type": f.kind, "characters": f"{f.start}-{f.end}",
                                    "confidence": f.confidence} for f in found]), hide_index=True,
                     key=KEY + "found", column_config={"confidence": st.column_config.ProgressColumn(
                         "confidence", min_value=0.0, max_value=1.0, format="percent")})
    with st.expander("Every word's tag probabilities"):
        probabilities = word_probabilities(result.model, result.tokenizer, [words], result.config.max_length)[0]
        st.plotly_chart(for_screen(tag_probability_heatmap(words, probabilities, result.label_names)),
                        key=KEY + "probabilities",
                        config=CHART)
