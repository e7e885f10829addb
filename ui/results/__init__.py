"""The Class results page's UI (pages/results.py): the teacher's report and a student's own results."""
