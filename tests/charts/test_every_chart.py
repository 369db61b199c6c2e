"""Every chart ``python -m simulator charts`` saves, drawn by its own job and read at the size a
reader sees it: no text overprints another or leaves the figure, and none is under 10 px.

The jobs run as ``charts`` runs them (the studies at their default size; the accuracy charts from
the committed tables, as ``test_charts.py`` draws them, and the error distribution from the
study at its CI size), with :func:`simulator.charts.save` replaced by a hand that keeps each
figure by the name it would have been saved under. A chart is shown at the width of its PNG
(100 dpi, cut to its contents) or, if that is wider, at the 848-px notebook column
(:data:`simulator.display.COLUMN_PX`), which shrinks it and its labels with it; GitHub's column
is about as wide.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from matplotlib.figure import Figure
from PIL import Image
from test_charts import committed_figures, drawn_texts, text_problems

from simulator.display import COLUMN_PX
from simulator.paths import DATA_DIR

pytestmark = pytest.mark.slow

#: The PNGs under data/ that no chart job draws: the explorer's screenshots (browser tests).
SCREENSHOTS = {p.stem for p in DATA_DIR.glob("explorer*.png")}
CHARTS = sorted(p.stem for p in DATA_DIR.glob("*.png") if p.stem not in SCREENSHOTS)
MIN_PX = 10.0


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Figure]:
    import simulator.charts
    from simulator.charts.accuracy import error_figure
    from simulator.cli.jobs import CHART_JOBS
    from simulator.studies.accuracy import study

    kept: dict[str, Figure] = {}

    def keep(fig: Figure, name: str, out_dir: object = None) -> list[Path]:
        kept[name] = fig
        return []

    out = tmp_path_factory.mktemp("charts")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(simulator.charts, "save", keep)
        for name, job in CHART_JOBS.items():
            if name != "accuracy":  # a study and three sweeps: drawn from its tables below
                job(out, False)
    for name, fig in committed_figures().items():
        kept.setdefault(name, fig)
    kept["accuracy_error_distribution"] = error_figure(study("ci")[0])
    return kept


def shown_scale(fig: Figure) -> float:
    """How much the reader's column shrinks the saved PNG (1: shown at its own size)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    width_px = Image.open(buf).size[0]
    return min(1.0, COLUMN_PX / width_px)


def test_every_committed_chart_is_drawn_here(figures):
    assert set(figures) >= set(CHARTS), sorted(set(CHARTS) - set(figures))


@pytest.mark.parametrize("name", CHARTS)
def test_no_text_overprints_another_or_leaves_the_figure(figures, name):
    assert not text_problems(figures[name])


@pytest.mark.parametrize("name", CHARTS)
def test_every_text_is_at_least_10_px_at_the_size_shown(figures, name):
    fig = figures[name]
    px_per_pt = 100 / 72 * shown_scale(fig)  # saved at 100 dpi; a point is 1/72 in
    small = sorted(
        {
            f"{where} {t.get_text()[:40]!r}: {t.get_fontsize() * px_per_pt:.1f} px"
            for where, t in drawn_texts(fig)
            if t.get_fontsize() * px_per_pt < MIN_PX
        }
    )
    assert not small, small


@pytest.fixture(scope="module")
def lesson_figures() -> dict[str, Figure]:
    """The charts only a lesson draws, from the lesson's own inputs: 06's two mistakes graded,
    07's comparison of three candidates on the sample access log."""
    from simulator.algorithms import ALGORITHMS
    from simulator.charts.check import mismatch_figure
    from simulator.charts.compare import (
        client_flips_figure,
        client_peaks_figure,
        flips_over_time_figure,
        scorecard_figure,
    )
    from simulator.comparison.limits import compare_limits
    from simulator.userscripts import register_script
    from simulator.userscripts.check import check

    root = Path(__file__).resolve().parents[2]
    figs: dict[str, Figure] = {}
    mistakes = root / "notebooks" / "exercises" / "mistakes"
    for script, reference in (
        ("fixed_window_zeros", "fixed_window"),
        ("first_hit_rearmed", "echomq"),
    ):
        register_script(mistakes / f"{script}.lua", f"lesson_{script}")
        try:
            figs[script] = mismatch_figure(check(f"lesson_{script}", reference).mismatch, script)
        finally:
            ALGORITHMS.pop(f"lesson_{script}")
    limits = [5, 10, 20, 50]
    card, clients, _, peaks = compare_limits(
        root / "data" / "traces" / "apache_combined_sample.log",
        "fixed_window:limit=10,window=10",
        [f"{a}:limit=10,window=10" for a in ("sliding_counter", "token_bucket", "sliding_log")],
        limits,
        fmt="clf",
        backend="auto",  # as the lesson runs it
    )
    figs["scorecard"] = scorecard_figure(card)
    figs["flips_over_time"] = flips_over_time_figure(card)
    figs["client_flips"] = client_flips_figure(card, clients, top=5)
    figs["client_peaks"] = client_peaks_figure(peaks, limits, top=30)
    return figs


def test_the_lessons_own_charts_keep_10_px_and_overprint_nothing(lesson_figures):
    for name, fig in lesson_figures.items():
        assert not text_problems(fig), name
        px_per_pt = 100 / 72 * shown_scale(fig)
        small = [
            t.get_text()[:40] for _, t in drawn_texts(fig) if t.get_fontsize() * px_per_pt < MIN_PX
        ]
        assert not small, (name, small)
