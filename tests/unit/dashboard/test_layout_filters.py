"""The dashboard's template filters behind the layout fixes (issue 28): clipped questions, source paths that wrap
at their separators, timestamps in a span that never wraps."""

from __future__ import annotations

from relayrag.dashboard.core import _fmt_time, clip, path_breaks


def test_clip_cuts_long_text_at_a_word_with_an_ellipsis_and_keeps_short_text():
    assert clip("  Where is\n staff parking? ") == "Where is staff parking?"
    long = "word " * 1000
    out = clip(long, 160)
    assert len(out) <= 160 and out.endswith("…") and not out.endswith(" …") and "  " not in out
    assert clip("x" * 500, 100) == "x" * 99 + "…"  # no space to cut at: cut at the limit
    assert clip(None) == ""


def test_path_breaks_escapes_wraps_at_separators_and_shortens_the_middle():
    assert str(path_breaks("/a/<b>/c.md")) == "/<wbr>a/<wbr>&lt;b&gt;/<wbr>c.md"
    assert str(path_breaks("/docs/x/report.md", "report.md")) == "/<wbr>docs/<wbr>x/"  # the name column shows the rest
    assert str(path_breaks("gs://b/report.md", "other.md")).endswith("report.md")
    deep = "/" + "/".join(f"folder-{i}" for i in range(40)) + "/"
    shown = str(path_breaks(deep, limit=48)).replace("<wbr>", "")
    assert len(shown) == 48 and "…" in shown and shown.startswith("/folder-0") and shown.endswith("folder-39/")


def test_timestamps_are_one_unwrappable_span():
    assert str(_fmt_time(0)).startswith('<span class="ts">19') and str(_fmt_time(None)) == '<span class="ts">—</span>'
