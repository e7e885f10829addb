"""The Fine-tuning lab's sentence and sentence-pair classification: data (built-in set or a CSV) and the
results only these tasks have (confusion matrix, try your own, every held-out example, where the
held-out examples sit before and after). Computation: vizcore/finetune/classify.py, analysis.py."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui.feedback import CHART, plain
from ui.finetune.training import current_job, get_builtin_data, get_csv_frame, mistakes_first
from ui.layout import for_screen
from vizcore.errors import VizError
from vizcore.finetune.analysis import embedding_map, evaluate, finetuned_model, predict_sentence
from vizcore.finetune.classify import encode_pairs
from vizcore.finetune.datasets import MAX_BYTES, MAX_ROWS, TrainTestData, frame_to_train_test
from vizcore.finetune.figures import confusion_heatmap, pca_scatter, segment_strip
from vizcore.finetune.training import FinetuneResult

BUILTIN = {
    "sentence": ("Built-in sentiment set", "436 short English sentences written for this project (food, films, "
                 "travel, products, weather, service, work), labelled negative/positive, with a fixed held-out "
                 "split."),
    "pair": ("Built-in entailment pairs", "480 premise / hypothesis pairs written for this project (160 everyday "
             "premises, each with one entailed, one neutral and one contradicting hypothesis); 32 premises and "
             "their 96 pairs are held out, so no held-out premise is seen in training."),
}
TRY = {"sentence": ("The staff were friendly, but the food was cold.", None),
       "pair": ("A man is playing a guitar on a busy street.", "Someone is making music outdoors.")}


class ClassificationUI:
    """The lab's two functions for ``sentence`` or ``pair``; widget keys of pairs are ``finetune.pair.*``
    (sentence keys predate the other tasks and stay ``finetune.*``)."""

    def __init__(self, kind: str):
        self.kind = kind
        self.prefix = "finetune." if kind == "sentence" else "finetune.pair."

    def data_section(self) -> TrainTestData | None:
        """Built-in set or an uploaded CSV with chosen columns; shows counts. None (with a message) if unusable."""
        builtin, note = BUILTIN[self.kind]
        source = st.radio("Data", [builtin, "Upload a CSV"], horizontal=True, key=self.prefix + "source")
        if source == builtin:
            data = get_builtin_data(self.kind)
            st.caption(note)
        else:
            data = self._uploaded_data()
            if data is None:
                return None
        counts = ", ".join(f"{plain(name)} {n}" for name, n in data.train.counts().items())
        st.markdown(f"**{len(data.train)} training** ({counts}) and **{len(data.test)} held-out** examples; "
                    f"held out by {data.split_note}.")
        if data.train.dropped_empty:
            st.warning(f"{data.train.dropped_empty} row(s) with an empty text or label were skipped.")
        if self.kind == "pair":
            st.caption("Each pair is read as one input, [CLS] A [SEP] B [SEP]; the segment ids tell the model "
                       "which sentence a token belongs to (see the results).")
        return data

    def _uploaded_data(self) -> TrainTestData | None:
        needs = "two text columns (sentence A, sentence B) and a label column" if self.kind == "pair" else \
            "a text column and a label column"
        held = "20 % of the first texts are held out with all their pairs" if self.kind == "pair" else \
            "20 % of each label is held out"
        upload = st.file_uploader(
            f"CSV with a header row and {needs} (UTF-8, at most {MAX_BYTES // 1_000_000} MB and {MAX_ROWS:,} "
            f"rows); a column 'split' with train/test values sets the held-out set, otherwise {held}",
            type=["csv"], key=self.prefix + "upload")
        if upload is None:
            st.info("Upload a CSV to continue, or pick the built-in set.")
            return None
        try:
            frame = get_csv_frame(upload.getvalue(), upload.name)
            columns = self._columns(list(frame.columns))
            return frame_to_train_test(frame, columns[0], columns[-1], upload.name,
                                       second_column=columns[1] if self.kind == "pair" else None)
        except VizError as error:
            st.error(str(error))
            return None

    def _columns(self, columns: list[str]) -> list[str]:
        roles = [("Text column", "text_column", ("text", "sentence", "review"), 0)]
        if self.kind == "pair":
            roles = [("Sentence A column", "first_column", ("premise", "sentence1", "text_a", "question"), 0),
                     ("Sentence B column", "second_column", ("hypothesis", "sentence2", "text_b"), 1)]
        roles.append(("Label column", "label_column", ("label", "sentiment", "class", "target", "gold_label"),
                      len(roles)))
        chosen = []
        for column, (label, key, names, fallback) in zip(st.columns(len(roles)), roles):
            chosen.append(column.selectbox(label, columns, index=_guess(columns, names, fallback),
                                           key=self.prefix + key))
        return chosen

    def results_section(self, result: FinetuneResult, data: TrainTestData) -> None:
        evaluation, emap = _analysis(result, data)
        left, right = st.columns([2, 3])
        left.plotly_chart(for_screen(confusion_heatmap(evaluation.confusion, evaluation.label_names)),
                          key=self.prefix + "confusion", config=CHART)
        left.caption("Macro-F1 (above) is the mean of the classes' F1 scores: a small class counts as much as a "
                     "large one, so it drops when a model ignores a class that accuracy hardly notices.")
        with right:
            self._try(result)
        if self.kind == "pair":
            self._segments(result, data)
        _examples_table(evaluation, self.prefix)
        _embeddings(emap, data, self.kind)

    def _try(self, result: FinetuneResult) -> None:
        first, second = TRY[self.kind]
        if self.kind == "pair":
            st.subheader("Try your own pair")
            text = st.text_input("Sentence A (premise)", first, key=self.prefix + "try")
            pair = st.text_input("Sentence B (hypothesis)", second, key=self.prefix + "try_b")
        else:
            st.subheader("Try your own sentence")
            text, pair = st.text_input("Sentence", first, key=self.prefix + "try"), None
        try:
            probabilities = predict_sentence(result, text, pair)
        except VizError as error:
            st.warning(str(error))
            return
        best = max(probabilities, key=probabilities.get)
        st.markdown(f"Prediction: **{plain(best)}** ({probabilities[best]:.1%})")
        for name, value in sorted(probabilities.items(), key=lambda item: -item[1]):
            st.progress(value, text=f"{name}: {value:.1%}")

    def _segments(self, result: FinetuneResult, data: TrainTestData) -> None:
        st.subheader("How a pair is encoded")
        test = data.test
        index = st.selectbox("Held-out pair", range(len(test)), key=self.prefix + "encoded",
                             format_func=lambda i: f"{test.texts[i]} | {test.second[i]}"[:120])
        ids, segments = encode_pairs(result.tokenizer, [test.texts[index]], [test.second[index]],
                                     result.config.max_length)
        tokens = result.tokenizer.convert_ids_to_tokens(ids[0])
        st.plotly_chart(for_screen(segment_strip(tokens, segments[0])), key=self.prefix + "segments", config=CHART)
        st.caption(f"{len(tokens)} tokens: sentence A with its [CLS] and first [SEP] has segment id 0, sentence B "
                   "and the last [SEP] segment id 1. Both halves go through the encoder together, so attention "
                   "can compare them; the classifier reads the pooled vector of the whole pair.")


def _analysis(result: FinetuneResult, data: TrainTestData):
    """Predictions on the held-out set and the before/after sentence map, once per finished run (kept in
    this session beside its model copy)."""
    key = "finetune.classify_analysis"
    kept = st.session_state.get(key)
    if kept is None or kept[0] is not result:
        before = current_job().loaded
        with st.spinner("Measuring the held-out set and the sentence vectors before and after…"):
            after = finetuned_model(before, result)
            emap = embedding_map(before, after, data.test, result.config.pooling, result.config.max_length)
            kept = (result, evaluate(result, data.test), emap)
        st.session_state[key] = kept
    return kept[1], kept[2]


def _guess(columns: list[str], names: tuple[str, ...], fallback: int = 0) -> int:
    lowered = [c.lower() for c in columns]
    for name in names:
        if name in lowered:
            return lowered.index(name)
    return min(fallback, len(columns) - 1)


def _examples_table(evaluation, prefix: str) -> None:
    st.subheader("Every held-out example")
    table = mistakes_first(evaluation.records())
    only_wrong = st.checkbox(f"Only the {int((table['correct'] == '✗').sum())} mistakes", key=prefix + "only_wrong")
    if only_wrong:
        table = table[table["correct"] == "✗"]
    pair = "second" in table.columns
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch", key=prefix + "examples", column_config={
        "text": st.column_config.TextColumn("sentence A" if pair else "text", width="large"),
        "second": st.column_config.TextColumn("sentence B", width="large"),
        "confidence": st.column_config.ProgressColumn("confidence", min_value=0.0, max_value=1.0, format="percent"),
        "correct": st.column_config.TextColumn("correct", width="small"),
    })


def _embeddings(emap, data: TrainTestData, kind: str) -> None:
    test = data.test
    what = "pairs" if kind == "pair" else "sentences"
    st.subheader(f"Where the held-out {what} sit")
    texts = test.texts if test.second is None else tuple(f"{a} | {b}" for a, b in zip(test.texts, test.second))
    st.plotly_chart(for_screen(pca_scatter(emap.before, emap.after, test.labels, test.label_names, texts,
                                           (emap.explained_before, emap.explained_after))), key=f"finetune.{kind}.pca",
                    config=CHART)
    st.caption(f"Each dot is a held-out {what[:-1]}'s pooled vector (the classifier's input), projected on its "
               f"first two principal components. Class separation (between-class over within-class spread "
               f"in the full space): {emap.separation_before:.2f} before, {emap.separation_after:.2f} after.")


SENTENCE_UI = ClassificationUI("sentence")
PAIR_UI = ClassificationUI("pair")
