"""The Start and Stop buttons of a background job (``ui.jobs.start_stop``), as the tiny Transformer, the
date translator's training and head importance draw them."""

from streamlit.testing.v1 import AppTest

from tests.app.conftest import TIMEOUT


def job_page():
    import streamlit as st

    from ui import jobs
    from vizcore.errors import VizError
    from vizcore.jobs import BackgroundJob

    class Waiting(BackgroundJob):
        def _run(self) -> None:
            self._stop.wait(30)

    def make() -> BackgroundJob:
        if st.session_state.get("test.refuse"):
            raise VizError("These settings cannot be trained.")
        return Waiting()

    st.checkbox("Refuse", key="test.refuse")
    busy = jobs.start_stop("test.job", make, "Train", ("test.start", "test.stop"))
    st.write(f"busy: {busy}")


def shown(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def test_start_queues_the_job_and_stop_ends_it():
    at = AppTest.from_function(job_page, default_timeout=TIMEOUT).run()
    assert at.button(key="test.stop").disabled and "busy: False" in shown(at)
    at.button(key="test.start").click().run()
    assert "busy: True" in shown(at) and not at.button(key="test.stop").disabled  # drawn after the click
    at.run()  # the start button was drawn before it: the next run shows it disabled
    assert at.button(key="test.start").disabled and not at.button(key="test.stop").disabled
    job = at.session_state["test.job"]
    at.button(key="test.stop").click().run()
    job.join(30)
    at.run()
    assert job.status == "stopped" and "busy: False" in shown(at) and not at.button(key="test.start").disabled


def test_a_job_that_cannot_start_is_a_message_and_the_page_goes_on():
    at = AppTest.from_function(job_page, default_timeout=TIMEOUT).run()
    at.checkbox(key="test.refuse").check().run()
    at.button(key="test.start").click().run()
    assert [e.value for e in at.error] == ["These settings cannot be trained."]
    assert "busy: False" in shown(at) and at.button(key="test.stop").disabled
    assert "test.job" not in at.session_state
