"""The accessibility checks themselves (conftest.assert_accessible, run at every page and view of the laptop sweeps;
the projector's 7:1 contrast, test_projector_browser.contrast_below_7): they find what WCAG forbids, so their
silence on the app's pages means something."""

from __future__ import annotations

from tests.e2e.conftest import axe_violations
from tests.e2e.test_projector_browser import contrast_below_7

FAULTY = """<!doctype html><html lang="en"><head><title>faults</title></head><body><main>
<p style="color:#aaaaaa; background:#ffffff">Grey on white, 2.3:1</p>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
<button></button>
</main></body></html>"""
CLEAN = FAULTY.replace("#aaaaaa", "#595959").replace("<img src", '<img alt="a dot" src').replace(
    "<button></button>", "<button>Train</button>")


def test_axe_finds_low_contrast_a_picture_without_text_and_a_nameless_button(page):
    page.set_content(FAULTY)
    found = {line.split(" ")[0] for line in axe_violations(page)}
    assert {"color-contrast", "image-alt", "button-name"} <= found, found
    page.set_content(CLEAN)
    assert axe_violations(page) == []


def test_the_projectors_contrast_check_finds_text_below_7_to_1_whether_or_not_it_passes_4_5_to_1(page):
    for grey, ratio in (("#666666", "5.7:1"), ("#aaaaaa", "2.3:1")):
        page.set_content(FAULTY.replace("#aaaaaa", grey))
        assert [line for line in contrast_below_7(page) if "Grey on white" in line], ratio
    page.set_content(FAULTY.replace("#aaaaaa", "#000000"))
    assert contrast_below_7(page) == []
