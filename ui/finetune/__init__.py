"""Streamlit side of the Fine-tuning lab (pages/finetune.py): the task tab (views.py), its settings and job
(training.py), one module per task (classify.py, token.py, qa.py) and the tiny Transformer tab (tiny.py)."""
