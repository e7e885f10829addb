"""The Fine-tuning lab's extractive question answering: data (built-in or upload) and the results views.

The lab's dispatcher (ui/finetune/views.py) calls ``data_section()`` before training and
``results_section(result, data)`` after. Everything heavy (reading the held-out set with the
fine-tuned model) is computed once per finished run and kept in this session's state.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
import torch

from ui.feedback import CHART, plain
from ui.layout import for_screen
from vizcore.errors import VizError
from vizcore.finetune.analysis import token_map
from vizcore.finetune.figures import pca_scatter
from vizcore.finetune.qa import MAX_BYTES, MAX_QUESTIONS, QAData, QASet, builtin_qa, read_qa_bytes
from vizcore.finetune.qa_figures import highlighted_passage, span_probability_bars
from vizcore.finetune.qa_metrics import answer_scores, baseline_scores
from vizcore.finetune.qa_predict import ANSWER_POSITIONS, QAReading, answer_question, predicted_answers, read_example
from vizcore.finetune.qa_task import QA
from vizcore.finetune.tasks import pad_id_of

KEY = "finetune.qa"
KEY_ANALYSIS = f"{KEY}.analysis"
TRY_PASSAGE = ("The Great Wall of China was built over many centuries to protect Chinese states from raids. "
               "Most of the wall that stands today was built during the Ming dynasty, between 1368 and "
               "1644. It is made of stone, brick and rammed earth, and its main line runs for about "
               "6,000 kilometres across the north of the country.")
TRY_QUESTION = "Which dynasty built most of the wall that survives?"
MAP_QUESTIONS = 16  # held-out questions whose passage token vectors are projected before and after
GROUPS = ("rest of the passage", "the gold answer")
FORMATS = """\
* **SQuAD v1.1 JSON**: `{"data": [{"title": ..., "paragraphs": [{"context": ..., "qas": [{"id": ...,
  "question": ..., "answers": [{"text": ..., "answer_start": 42}]}]}]}]}`; SQuAD 2.0's unanswerable
  questions are skipped.
* **A list of passages** (the built-in set's format): `[{"context": ..., "split": "train",
  "questions": [{"question": ..., "answers": [{"text": ..., "answer_start": 42}]}]}]`.
* **CSV** with columns `context`, `question`, `answer` (optional `answer_start`, `split`): the answer
  must occur in its context exactly once, or `answer_start` must say where.

`answer_start` is the answer's character offset in the context (0 = the first character). With a
`split` of `train`/`test` everywhere, that split is used; otherwise 20 % of the passages, with all
their questions, are held out at random (seed 0)."""


@st.cache_data(show_spinner=False, max_entries=1)
def _builtin() -> QAData:
    return builtin_qa()


@st.cache_data(show_spinner="Reading the file…", max_entries=4)
def _uploaded(payload: bytes, name: str) -> QAData:
    return read_qa_bytes(payload, name)


def data_section() -> QAData | None:
    """The built-in set or an upload, with its counts; None (with a message) when nothing is usable."""
    source = st.radio("Data", ["Built-in question set", "Upload questions"], horizontal=True, key=f"{KEY}.source")
    if source == "Built-in question set":
        data = _builtin()
        st.caption("Encyclopaedia-like passages written for this project (how things work, places, animals, "
                   "inventions, history), each with 5 or 6 questions whose answers are spans of the passage.")
        _sample(data)
    else:
        data = _upload()
        if data is None:
            return None
    st.markdown(f"**{len(data.train)} training questions** over {data.train.passages} passages and "
                f"**{len(data.test)} held-out** over {data.test.passages}; held out by {data.split_note}.")
    if data.skipped:
        st.warning(f"{data.skipped} question(s) without an answer (SQuAD 2.0's unanswerable ones) were skipped: "
                   "this model points at a span of the passage and cannot say 'no answer'.")
    return data


def _sample(data: QAData) -> None:
    first = data.train.examples[0]
    with st.expander(f"A passage and its questions: {first.title}"):
        st.markdown(plain(first.context))
        for example in data.train.examples:
            if example.context == first.context:
                st.markdown(f"- {plain(example.question)} → **{plain(example.answers[0].text)}** (characters "
                            f"{example.answers[0].start} to {example.answers[0].end})")


def _upload() -> QAData | None:
    with st.expander("Accepted formats"):
        st.markdown(FORMATS)
    upload = st.file_uploader(f"JSON or CSV (UTF-8, at most {MAX_BYTES // 1_000_000} MB and "
                              f"{MAX_QUESTIONS:,} questions)", type=["json", "csv"], key=f"{KEY}.upload")
    if upload is None:
        st.info("Upload a file to continue, or pick the built-in set.")
        return None
    try:
        return _uploaded(upload.getvalue(), upload.name)
    except VizError as error:
        st.error(str(error))
        return None


# ---- results ---------------------------------------------------------------------------------------

def _analysis(result, data: QAData) -> dict:
    """Predictions on the held-out set and the baselines, once per finished run (kept in this session)."""
    cached = st.session_state.get(KEY_ANALYSIS)
    if cached is not None and cached["result"] is result:
        return cached
    examples = data.test.examples
    with st.spinner("Answering every held-out question…"):
        predictions = predicted_answers(result.model, result.tokenizer, examples, result.config.max_length)
    scores = answer_scores(predictions, examples)
    table = pd.DataFrame({
        "question": [e.question for e in examples],
        "gold answer": [" | ".join(a.text for a in e.answers) for e in examples],
        "predicted": predictions, "token F1": scores["token_f1"], "exact": scores["exact_match"] == 1.0,
        "passage": [e.title or e.context[:40] + "…" for e in examples],
    })  # the index is the question's position in the held-out set
    analysis = {"result": result, "table": table.sort_values("token F1", kind="stable"),
                "baselines": baseline_scores(examples)}
    st.session_state[KEY_ANALYSIS] = analysis
    return analysis


def vectors_section(job, after) -> None:
    """Where the passage tokens sit: each passage token's last-layer vector (read with its question) before
    and after fine-tuning, projected on its first two principal components, the gold answer's tokens apart."""
    examples = job.data.test.examples[:MAP_QUESTIONS]
    kept = st.session_state.get(f"{KEY}.vectors")
    if kept is None or kept[0] is not job.result:
        loaded = job.loaded
        features = QA.encode(loaded.tokenizer, QASet(examples), job.config.max_length)
        batch = QA.collate(features, pad_id_of(loaded.tokenizer), loaded.device, loaded.model)
        inputs = {k: v for k, v in batch.inputs.items() if k != ANSWER_POSITIONS}
        chosen = batch.inputs[ANSWER_POSITIONS].clone()
        chosen[:, 0] = False  # [CLS] is no passage token
        start, end = (t[:, None] for t in batch.targets)  # (B, 1); both 0 when the answer was cut off
        positions = torch.arange(chosen.shape[1], device=chosen.device)[None, :]
        inside = (positions >= start) & (positions <= end) & (start > 0)
        labels = inside[chosen].long().cpu().numpy()
        rows = chosen.nonzero().tolist()
        texts = tuple(f"{loaded.tokenizer.convert_ids_to_tokens(int(inputs['input_ids'][r, c]))} · "
                      f"{examples[r].question[:80]}" for r, c in rows)
        with st.spinner("Projecting the passages' token vectors…"):
            kept = (job.result, token_map(loaded, after, inputs, chosen, labels), labels, texts)
        st.session_state[f"{KEY}.vectors"] = kept
    _, emap, labels, texts = kept
    st.subheader("Where the answer's tokens sit")
    figure = pca_scatter(emap.before, emap.after, labels, GROUPS, texts,
                         (emap.explained_before, emap.explained_after),
                         f"Passage token vectors of {len(examples)} held-out questions (PCA)", "token",
                         ("#cbd5e1", "#15803d"))
    st.plotly_chart(for_screen(figure), key=f"{KEY}.pca", config=CHART)
    st.caption(f"Each dot is one passage token, read together with its question: the last layer's vector (what "
               f"the span head reads), projected on its own first two principal components; green dots are the "
               f"gold answer's tokens ({int(np.sum(labels))} of {len(labels)}). Separation of the two groups "
               f"(between over within spread in the full space): {emap.separation_before:.2f} before, "
               f"{emap.separation_after:.2f} after.")


def attention_inputs(data: QAData) -> tuple[list[str], list[str]]:
    """The held-out (question, passage) pairs, for the lab's before / after attention view."""
    return [e.question for e in data.test.examples], [e.context for e in data.test.examples]


def results_section(result, data: QAData) -> None:
    """Token F1 and exact match beside the baselines, every held-out question, one question's start / end
    probabilities and highlighted passage, and a passage and question of your own."""
    analysis = _analysis(result, data)
    _scores(result, analysis)
    _examples(analysis)
    _one_example(result, data, analysis)
    _try_your_own(result)


def _scores(result, analysis: dict) -> None:
    """Token F1 and exact match beside what answers without fine-tuning get (the headline figures above
    are the lab's)."""
    before, after = result.history.evals[0], result.scores
    rows = [{"answers from": "the model before training (step 0: an untrained span head)", **_pair(before)}]
    rows += [{"answers from": f"no model: {name}", **_pair(s)} for name, s in analysis["baselines"].items()]
    rows.append({"answers from": "the fine-tuned model", **_pair(after)})
    st.subheader("Against baselines")
    st.dataframe(pd.DataFrame(rows), hide_index=True, key=f"{KEY}.scores", column_config={
        "answers from": st.column_config.TextColumn(width="large"),
        "token F1": st.column_config.NumberColumn(format="%.3f"),
        "exact match": st.column_config.NumberColumn(format="%.3f")})
    st.caption("Token F1: the words shared by the predicted and the gold answer (harmonic mean of precision and "
               "recall) after SQuAD's normalisation (lower case, no punctuation, no a / an / the); exact match: "
               "the two are equal after it. Both are means over the held-out questions. The sentence baselines "
               "answer with a whole sentence, so their exact match is about zero.")


def _pair(scores: dict) -> dict[str, float]:
    return {"token F1": scores["token_f1"], "exact match": scores["exact_match"]}


def _examples(analysis: dict) -> None:
    st.subheader("Every held-out question")
    table = analysis["table"]
    wrong = int((~table["exact"]).sum())
    if st.checkbox(f"Only the {wrong} not exactly right", key=f"{KEY}.only_wrong"):
        table = table[~table["exact"]]
    st.dataframe(table, hide_index=True, width="stretch", key=f"{KEY}.examples",
                 column_config={
                     "question": st.column_config.TextColumn(width="large"),
                     "token F1": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.2f"),
                     "exact": st.column_config.CheckboxColumn("exact match")})
    st.caption("Mistakes first: sorted by token F1, lowest first.")


def _one_example(result, data: QAData, analysis: dict) -> None:
    st.subheader("Where the model looks for the answer")
    table = analysis["table"]
    choice = st.selectbox("Held-out question (mistakes first)", table.index.tolist(), key=f"{KEY}.example",
                          format_func=lambda i: f"{data.test.examples[i].question} (F1 {table.at[i, 'token F1']:.2f})")
    reading = read_example(result.model, result.tokenizer, data.test.examples[choice], result.config.max_length)
    _reading(reading, "example")


def _reading(reading: QAReading, name: str) -> None:
    st.html(highlighted_passage(reading))
    st.plotly_chart(for_screen(span_probability_bars(reading)), key=f"{KEY}.bars_{name}", config=CHART)
    window = f" It read the passage in {reading.windows} overlapping windows; shown: the one the answer came from." \
        if reading.windows > 1 else ""
    st.caption("Each bar is one passage token: the probability that the answer starts (top) or ends (bottom) "
               "there (a softmax over the passage's tokens). The answer is the span, at most 30 tokens long, "
               f"with the largest p(start) × p(end), here {reading.probability:.3f}. Drag the chart or its slider "
               f"to scroll a long passage.{window}")


def _try_your_own(result) -> None:
    st.subheader("Ask your own question")
    passage = st.text_area("Passage", TRY_PASSAGE, height=140, key=f"{KEY}.try_passage")
    question = st.text_input("Question", TRY_QUESTION, key=f"{KEY}.try_question")
    try:
        reading = answer_question(result.model, result.tokenizer, passage, question, result.config.max_length)
    except VizError as error:
        st.warning(str(error))
        return
    st.markdown(f"Answer: **{plain(reading.answer)}** (p = {reading.probability:.2f})")
    _reading(reading, "try")
