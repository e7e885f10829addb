"""The accessibility check itself (conftest.assert_accessible, run at every page and view of the laptop sweeps):
it finds what WCAG 2.2 AA forbids, so its silence on the app's pages means something."""

from __future__ import annotations

from tests.e2e.conftest import axe_violations

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
