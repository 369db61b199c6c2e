"""Every chart draws from small frames: the right panels, titled and labelled, in the registry's
colours, and saved as PNG and SVG that are the same bytes each time.

The frames come from the studies at a tiny size (the memory charts from the committed tables),
so a chart that breaks on a study's real output fails here, not in ``python -m simulator charts``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.category import StrCategoryLocator
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FixedLocator

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.palette import MIN_CHROMA, MIN_DELTA_E, chroma, delta_e
from simulator.charts import LABELS, PALETTE, ROLE_COLOURS, order, save, subplots
from simulator.charts import accuracy as accuracy_charts
from simulator.charts import burst as burst_charts
from simulator.charts import memory as memory_charts
from simulator.charts import queue as queue_charts
from simulator.charts import servers as server_charts
from simulator.checks import ConfigError
from simulator.engine.run import boundary_burst
from simulator.paths import DATA_DIR
from simulator.studies import queue_studies as qs
from simulator.studies.accuracy import load_sweep, run_study
from simulator.studies.families import Family, offered
from simulator.studies.memory_tables import read_tables
from simulator.studies.queue_budget import QueueScenario, Room, run_many, sweep

LIMIT, WINDOW_MS = 5, 1000


# --- nothing overprinted or cut -----------------------------------------------------------------
def drawn_texts(fig: Figure) -> list[tuple[str, Text]]:
    """Every text a reader sees, with where it is: the suptitle and figure texts, and per visible
    axes its titles, axis labels, the tick labels drawn (those within the view), its texts and its
    legend's, and the figure's legends."""
    out: list[tuple[str, Text]] = []
    if fig._suptitle is not None:
        out.append(("suptitle", fig._suptitle))
    out += [("figure text", t) for t in fig.texts]
    for legend in fig.legends:
        out += [("figure legend", t) for t in legend.get_texts()]
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        where = f"axes {i}"
        out += [(f"{where} title", t) for t in (ax.title, ax._left_title, ax._right_title)]
        for axis in (ax.xaxis, ax.yaxis):
            if not axis.get_visible():
                continue
            out.append((f"{where} axis label", axis.label))
            for tick in axis._update_ticks():  # the ticks drawn: those within the view
                out += [(f"{where} tick", t) for t in (tick.label1, tick.label2)]
        out += [(f"{where} text", t) for t in ax.texts]
        legend = ax.get_legend()
        if legend is not None:
            out += [(f"{where} legend", t) for t in [*legend.get_texts(), legend.get_title()]]
    seen: set[int] = set()
    kept = []
    for where, t in out:
        if id(t) not in seen and t.get_visible() and t.get_text().strip():
            seen.add(id(t))
            kept.append((where, t))
    return kept


def text_problems(fig: Figure, slack_px: float = 1.0) -> list[str]:
    """Texts whose drawn boxes overlap one another or reach outside the figure (``slack_px``
    forgives antialiasing at an edge)."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [(w, t.get_text(), t.get_window_extent(renderer)) for w, t in drawn_texts(fig)]
    width, height = fig.bbox.width, fig.bbox.height
    problems = [
        f"{w} {text!r} leaves the figure"
        for w, text, b in boxes
        if min(b.x0, b.y0) < -slack_px or b.x1 > width + slack_px or b.y1 > height + slack_px
    ]
    for i, ax in enumerate(fig.axes):  # an axes' legend inside its axes, or a neighbour cuts it
        legend = ax.get_legend()
        if ax.get_visible() and legend is not None:
            b, box = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
            if b.x0 < box.x0 - slack_px or b.x1 > box.x1 + slack_px:
                problems.append(f"axes {i} legend reaches outside its axes")
    for i, (w1, t1, a) in enumerate(boxes):
        for w2, t2, b in boxes[i + 1 :]:
            dx = min(a.x1, b.x1) - max(a.x0, b.x0)
            dy = min(a.y1, b.y1) - max(a.y0, b.y0)
            if dx > slack_px and dy > slack_px:
                problems.append(f"{w1} {t1!r} overprints {w2} {t2!r} ({dx:.0f} x {dy:.0f} px)")
    return problems


def test_the_overprint_check_sees_an_overprint_and_a_cut():
    fig, ax = subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1])
    ax.set_title("a title")
    ax.text(0.5, 0.5, "here")
    ax.text(0.5, 0.5, "here too")
    ax.text(1.2, 0.5, "a long note that runs well past the right-hand edge", transform=ax.transAxes)
    problems = text_problems(fig)
    assert any("'here' overprints" in p and "'here too'" in p for p in problems), problems
    assert any("past the right-hand edge' leaves the figure" in p for p in problems), problems
    assert not any("a title" in p for p in problems), problems


# --- what every chart must do ---------------------------------------------------------------------
def plots_data(ax: Axes) -> bool:
    return bool(ax.lines or ax.patches or ax.collections)


def names_its_ticks(axis: Axis) -> bool:
    """A categorical axis: ticks named in words (bars per family, per method, per room kind)."""
    texts = [t.get_text().replace(r"\mathdefault", "") for t in axis.get_ticklabels()]
    return isinstance(axis.get_major_locator(), (FixedLocator, StrCategoryLocator)) and any(
        ch.isalpha() for text in texts for ch in text
    )


def aligned(ax: Axes, which: str) -> list[Axes]:
    """Axes read against the same scale as ``ax``: shared with it, or in its grid row (for y) or
    column (for x) with the very same limits, so that one label at the edge serves them all."""
    shared = ax.get_shared_x_axes() if which == "x" else ax.get_shared_y_axes()
    out = list(shared.get_siblings(ax))
    spec = ax.get_subplotspec()
    if spec is None:
        return out
    span, limits = ("rowspan", Axes.get_ylim) if which == "y" else ("colspan", Axes.get_xlim)
    for other in ax.figure.axes:
        o = other.get_subplotspec()
        if (
            o is not None
            and o.get_gridspec() is spec.get_gridspec()
            and getattr(o, span) == getattr(spec, span)
            and limits(other) == limits(ax)
        ):
            out.append(other)
    return out


def labelled(ax: Axes, which: str) -> bool:
    """The axis, or one aligned with it, has a label or names its ticks."""
    for other in aligned(ax, which):
        axis = other.xaxis if which == "x" else other.yaxis
        if axis.get_label_text() or names_its_ticks(axis):
            return True
    return False


#: A JupyterLab notebook column shows about this many pixels; a wider figure is shrunk to fit.
COLUMN_PX = 1070


def check_layout(fig: Figure, n_axes: int) -> None:
    assert isinstance(fig, Figure)
    assert len(fig.axes) == n_axes
    assert fig.get_figwidth() * 100 <= COLUMN_PX, "wider than a notebook column at 100 dpi"
    drawn = [ax for ax in fig.axes if plots_data(ax)]
    assert drawn, "no axes plots anything"
    suptitle = fig.get_suptitle()
    for i, ax in enumerate(drawn):
        assert ax.get_title() or suptitle, f"axes {i} has no title and the figure no suptitle"
        assert labelled(ax, "x"), f"axes {i} ({ax.get_title()!r}) has no x label"
        assert labelled(ax, "y"), f"axes {i} ({ax.get_title()!r}) has no y label"
    problems = text_problems(fig)
    assert not problems, "\n".join(problems)


def rgba(colour: Any) -> tuple[float, ...]:
    return tuple(round(c, 6) for c in to_rgba(colour))


def colours(ax: Axes) -> set[tuple[float, ...]]:
    """Every colour the axes draws data in: bar faces, lines, marker collections."""
    out = {rgba(p.get_facecolor()) for p in ax.patches}
    out |= {rgba(line.get_color()) for line in ax.lines}
    for c in ax.collections:
        out |= {rgba(fc) for fc in c.get_facecolors()}
    return out


def algorithm_colours(ax: Axes) -> set[str]:
    """The algorithms whose palette colour the axes uses."""
    used = colours(ax)
    return {name for name in ALGORITHMS if rgba(PALETTE[name]) in used}


def check_labelled_series(ax: Axes) -> int:
    """Every series named after an algorithm is drawn in that algorithm's colour."""
    by_label = {LABELS[name]: name for name in ALGORITHMS}
    seen = 0
    for container in ax.containers:
        name = by_label.get(container.get_label())
        if name is not None:
            faces = {rgba(p.get_facecolor()) for p in container.patches}
            assert faces == {rgba(PALETTE[name])}, name
            seen += 1
    for line in ax.lines:
        name = by_label.get(line.get_label())
        if name is not None:
            assert rgba(line.get_color()) == rgba(PALETTE[name]), name
            seen += 1
    return seen


# --- the palette --------------------------------------------------------------------------------
@pytest.mark.every_algorithm
def test_every_algorithm_and_role_has_its_own_colour_and_every_algorithm_a_name():
    assert order() == tuple(ALGORITHMS)
    assert set(PALETTE) == set(ALGORITHMS) | set(ROLE_COLOURS)
    values = [rgba(PALETTE[name]) for name in PALETTE]
    assert len(set(values)) == len(values)
    assert {name: PALETTE[name] for name in ALGORITHMS} == {
        name: cls.colour for name, cls in ALGORITHMS.items()
    }
    assert all(LABELS[name] == cls.label and cls.label for name, cls in ALGORITHMS.items())


@pytest.mark.parametrize("name", order())
def test_every_algorithm_keeps_the_colour_rule(name):
    colour = PALETTE[name]  # the lookup holds the registry to the rule
    assert chroma(colour) >= MIN_CHROMA
    others = {n: c for n, c in PALETTE.items() if n != name}
    assert min(delta_e(colour, c) for c in others.values()) >= MIN_DELTA_E


@pytest.mark.parametrize(
    "colour, message",
    [
        ("#000000", r"toy\.colour: '#000000' is a grey .*charts' ink"),
        ("#9a9a9a", r"toy\.colour: '#9a9a9a' is a grey"),
        ("#d52a2a", r"toy\.colour: '#d52a2a' is too close to fixed_window's '#d62728' \(Delta E"),
        ("#9065bb", r"too close to local's '#9467bd'"),  # a role's colour counts too
        ("not-a-colour", r"toy\.colour: 'not-a-colour' is not a colour"),
    ],
)
def test_a_colour_too_close_to_another_or_grey_is_refused_naming_both(monkeypatch, colour, message):
    class Toy(ALGORITHMS["fixed_window"]):  # type: ignore[misc, valid-type]
        name, label = "toy", "Toy"

    monkeypatch.setattr(Toy, "colour", colour)
    monkeypatch.setitem(ALGORITHMS, "toy", Toy)
    with pytest.raises(ConfigError, match=message) as refused:
        PALETTE["fixed_window"]
    if "not a colour" in message:
        return
    suggested = str(refused.value).split("; ")[-1].split()[0]
    assert suggested.startswith("#")  # a colour that would do, itself keeping the rule
    monkeypatch.setattr(Toy, "colour", suggested)
    assert PALETTE["toy"] == suggested


def test_users_scripts_get_colours_that_keep_the_rule():
    from simulator.userscripts import register_script

    names = [f"mine_{i}" for i in range(12)]  # more than the candidates left beside the registry
    try:
        for name in names:
            register_script(DATA_DIR / "card" / "sliding-log.lua", name)
        colours = [PALETTE[name] for name in names]  # the lookup holds them to the rule
        assert len(set(colours)) == len(names)
        assert min(chroma(c) for c in colours) >= MIN_CHROMA
    finally:
        for name in names:
            ALGORITHMS.pop(name, None)


# --- boundary burst -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def burst_frame() -> pd.DataFrame:
    frames = [boundary_burst(a, LIMIT, WINDOW_MS / 1000, 0.9, 1.1) for a in ALGORITHMS]
    return pd.concat(frames, ignore_index=True)


@pytest.mark.every_algorithm
def test_boundary_burst_figure(burst_frame):
    fig = burst_charts.boundary_burst_figure(burst_frame, LIMIT, WINDOW_MS, 0.9, 1.1)
    algorithms = order()
    check_layout(fig, 2 * -(-len(algorithms) // 2))  # one small panel each, two to a row
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(shown) == len(algorithms)
    assert fig.get_suptitle()
    for ax, name in zip(shown, algorithms, strict=True):
        assert ax.get_title() == LABELS[name]
        assert algorithm_colours(ax) == {name}
        assert rgba(PALETTE[name]) == rgba(ax.lines[0].get_color())
        # the clock grid's seam at 1 s is drawn
        assert any(list(line.get_xdata()) == [1.0, 1.0] for line in ax.lines)
        # what each burst got through is written in the panel (2 would be a sliver)
        admitted = burst_frame[burst_frame["algorithm"] == name]
        per_second = admitted.groupby(admitted["t_ms"] // 1000)["allowed"].sum()
        written = " ".join(t.get_text() for t in ax.texts)
        assert all(f"+{int(v)}" in written for v in per_second)


@pytest.mark.every_algorithm
def test_boundary_burst_figure_shows_only_the_algorithms_in_the_frame(burst_frame):
    two = list(order()[1:3])
    part = burst_frame[burst_frame["algorithm"].isin(two)]
    fig = burst_charts.boundary_burst_figure(part, LIMIT, WINDOW_MS, 0.9, 1.1)
    check_layout(fig, 2)
    assert [algorithm_colours(ax) for ax in fig.axes] == [{two[0]}, {two[1]}]
    # and those it is asked for, in that order
    picked = burst_charts.boundary_burst_figure(burst_frame, LIMIT, WINDOW_MS, 0.9, 1.1, two[::-1])
    assert [ax.get_title() for ax in picked.axes] == [LABELS[n] for n in two[::-1]]


# --- accuracy and adversaries -------------------------------------------------------------------
@pytest.fixture(scope="module")
def accuracy_study() -> tuple[pd.DataFrame, pd.DataFrame]:
    fams = [
        Family("steady", "poisson", 4, load=0.5, limit=10, window_ms=5000, duration_ms=30_000),
        Family("bursty", "on_off", 4, load=2.0, limit=10, window_ms=5000, duration_ms=30_000),
    ]
    decisions, _, summary = run_study((f.name, offered(f), f.limit, f.window_ms) for f in fams)
    return decisions, summary


def test_families_figure(accuracy_study):
    _, summary = accuracy_study
    fig = accuracy_charts.families_figure(summary)
    check_layout(fig, 4)
    for ax in fig.axes:
        (dots,) = ax.collections[1:]  # the guide lines, then the dots
        faces = [tuple(round(c, 6) for c in f) for f in dots.get_facecolors()]
        # Cloudflare's published row first, then ours: one dot per row of the summary, no bars
        assert faces == [rgba(PALETTE["exact"])] + [rgba(PALETTE["sliding_counter"])] * len(summary)
        assert not ax.patches
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert not any("_" in label for label in labels)  # family names in words


def test_error_figure(accuracy_study):
    decisions, _ = accuracy_study
    fig = accuracy_charts.error_figure(decisions)
    check_layout(fig, 1)
    (ax,) = fig.axes
    steps = [line for line in ax.lines if line.get_label() in {"steady", "bursty"}]
    assert len(steps) == 2


def test_load_sweep_figure():
    sweep_table = pd.concat(
        [load_sweep((0.5, 2.0), 4, kind) for kind in ("poisson", "on_off")], ignore_index=True
    )
    fig = accuracy_charts.load_sweep_figure(sweep_table)
    check_layout(fig, 2)  # one panel per kind of traffic
    for ax in fig.axes:
        series = [line for line in ax.lines if not line.get_label().startswith("_")]
        assert len(series) == 3  # three figures, each its own shade and marker
        assert len({rgba(line.get_color()) for line in series}) == 3
        assert len({line.get_marker() for line in series}) == 3
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        assert ticks == ["0.5", "2"]  # the swept loads, not powers of ten


@pytest.mark.every_algorithm
def test_schedule_figure(burst_frame):
    frames = {a: part for a, part in burst_frame.groupby("algorithm", sort=False)}
    fig = accuracy_charts.schedule_figure(frames, LIMIT, WINDOW_MS)
    algorithms = order()
    cols = min(3, len(algorithms))
    rows = -(-len(algorithms) // cols)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 2 * len(algorithms)
    grid = np.array(fig.axes).reshape(2 * rows, cols)
    spans = set()
    for k, name in enumerate(algorithms):
        top, bottom = grid[2 * (k // cols), k % cols], grid[2 * (k // cols) + 1, k % cols]
        assert top.get_title() == LABELS[name]
        assert algorithm_colours(top) == algorithm_colours(bottom) == {name}
        lo, hi = top.get_xlim()
        spans.add(round(hi - lo, 6))
    assert len(spans) == 1  # every panel spans the same time


# --- the EchoMQ queue budget --------------------------------------------------------------------
BASE = replace(qs.basic_scenario(), duration_ms=3000, drain_ms=1000)


def test_queue_basic_figure():
    fig = queue_charts.basic_figure(run_many(sweep(BASE, defer_pad_ms=[0, 1])))
    check_layout(fig, 3)
    a, b, c = fig.axes
    assert algorithm_colours(a) == algorithm_colours(b) == {"echomq"}
    assert [rgba(p.get_facecolor()) for p in c.patches] == [
        rgba(PALETTE["echomq"]),
        rgba(PALETTE["variant"]),
    ]


def test_queue_global_vs_local_figure():
    scenario = replace(BASE, rooms=(Room("room", 40.0),), defer_pad_ms=1)
    # four panels, as the notebook draws them: narrow enough that an axes' legend would be cut
    result = run_many(sweep(scenario, limiter=["server", "local"], workers=[1, 2, 4, 8]))
    fig = queue_charts.global_vs_local_figure(result)
    check_layout(fig, 4)
    for ax in fig.axes:
        steps = {line.get_label(): rgba(line.get_color()) for line in ax.lines}
        assert steps[queue_charts.LIMITER_LABELS["server"]] == rgba(PALETTE["echomq"])
        assert steps[queue_charts.LIMITER_LABELS["local"]] == rgba(PALETTE["local"])


def test_queue_fairness_figure():
    rooms = (Room(qs.FLOOD_ROOM, 20.0), Room("room1", 1.0), Room("room2", 1.0))
    shared = QueueScenario(
        rooms,
        workers=2,
        max_per_window=9,
        window_ms=1000,
        duration_ms=4000,
        stale_after_ms=1500,
        drain_ms=1000,
        defer_pad_ms=1,
    )
    result = run_many([shared, replace(shared, design="per_room", max_per_window=3, label="")])
    fig = queue_charts.fairness_figure(qs.fairness_table(result.jobs))
    check_layout(fig, 3)
    for ax in fig.axes:
        assert colours(ax) == {
            rgba(PALETTE["shared_queue"]),
            rgba(PALETTE["per_room"]),
        }
        assert not algorithm_colours(ax)


def test_queue_crash_figure():
    scenario = replace(BASE, crash_at_ms=1000, min_defer_ms=100, defer_pad_ms=1, drain_ms=0)
    fig = queue_charts.crash_figure(run_many(sweep(scenario, limiter=["server", "split"])))
    check_layout(fig, 1)
    (ax,) = fig.axes
    steps = {line.get_label(): rgba(line.get_color()) for line in ax.lines}
    assert steps[queue_charts.LIMITER_LABELS["server"]] == rgba(PALETTE["echomq"])
    assert steps[queue_charts.LIMITER_LABELS["split"]] == rgba(PALETTE["split"])


# --- memory (from the committed tables) ---------------------------------------------------------
@pytest.fixture(scope="module")
def memory_tables() -> dict[str, pd.DataFrame]:
    return read_tables(DATA_DIR)


def test_memory_per_user_figure(memory_tables):
    per_user = memory_tables["per_user"]
    fig = memory_charts.per_user_figure(per_user)
    check_layout(fig, 2)
    bars_from_the_top = per_user["algorithm"].iloc[::-1].tolist()
    for ax in fig.axes:
        faces = [rgba(p.get_facecolor()) for p in ax.patches]
        assert faces == [rgba(PALETTE[a]) for a in bars_from_the_top]


def test_memory_encoding_cliff_figure(memory_tables):
    fig = memory_charts.encoding_cliff_figure(memory_tables["encoding"])
    check_layout(fig, 2)
    for ax in fig.axes:
        assert algorithm_colours(ax) == {"sliding_log"}


def test_memory_bigkey_figure(memory_tables):
    bigkey = memory_tables["bigkey"]
    fig = memory_charts.bigkey_figure(bigkey)
    check_layout(fig, 3)
    shown = set(ALGORITHMS) & set(bigkey["algorithm"])  # every algorithm the study measured
    assert {"sliding_log", "sliding_counter", "token_bucket", "gcra"} <= shown  # the card's four
    for ax in fig.axes:
        assert check_labelled_series(ax) == len(shown)
        assert algorithm_colours(ax) == shown


# --- replay speed on a server -------------------------------------------------------------------
def test_replay_speed_figure():
    figures = pd.DataFrame(
        {
            "algorithm": ["fixed_window", "sliding_log"],
            "one_round_trip_per_s": [9_000.0, 8_000.0],
            "pipelined_per_s": [90_000.0, 70_000.0],
            "limits_per_s": [5_000.0, 3_000.0],
        }
    )
    fig = server_charts.replay_speed_figure(figures)
    check_layout(fig, 1)
    (ax,) = fig.axes
    assert check_labelled_series(ax) == 2
    assert algorithm_colours(ax) == {"fixed_window", "sliding_log"}


# --- save ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_save_writes_a_png_and_an_svg_and_the_svg_is_the_same_each_time(burst_frame, tmp_path):
    fig = burst_charts.boundary_burst_figure(burst_frame, LIMIT, WINDOW_MS, 0.9, 1.1)
    first = save(fig, "burst", tmp_path / "a" / "b")
    assert first == [tmp_path / "a" / "b" / "burst.png", tmp_path / "a" / "b" / "burst.svg"]
    png, svg = (p.read_bytes() for p in first)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
    assert b"<svg" in svg[:2000] and svg.rstrip().endswith(b"</svg>")
    again = save(fig, "burst", tmp_path / "c")
    assert again[1].read_bytes() == svg
    assert again[0].stat().st_size > 1000


@pytest.mark.every_algorithm
def test_contracts_figure_gives_each_algorithm_its_colour_and_hatches_the_variants():
    from simulator.charts.contracts import contracts_figure
    from simulator.studies.contracts import contracts_study

    fams = [
        Family("steady", "poisson", 4, load=0.5, limit=10, window_ms=5000, duration_ms=30_000),
        Family("bursty", "on_off", 4, load=2.0, limit=10, window_ms=5000, duration_ms=30_000),
    ]
    table = contracts_study(families_=fams)
    assert set(table["algorithm"]) == set(ALGORITHMS)
    log = table[table["variant"] == "sliding_log"]
    assert (log["admitted_vs_log_pct"] == 100).all() and (log["decided_differently_pct"] == 0).all()
    fig = contracts_figure(table)
    check_layout(fig, 2)
    ax = fig.axes[0]
    for container in ax.containers:
        label = container.get_label()
        name = next(n for n in ALGORITHMS if label.startswith(LABELS[n]))
        edges = {rgba(p.get_edgecolor()) for p in container.patches}
        assert edges == {rgba(PALETTE[name])}, label
        hatched = {p.get_hatch() for p in container.patches}
        assert hatched == ({"////"} if "small burst" in label else {None}), label


# --- the committed figures, at their real size --------------------------------------------------
def committed_figures() -> dict[str, Figure]:
    """The charts ``python -m simulator charts`` draws, from the tables committed under data/
    (the boundary burst and the adversaries' schedules replayed: a second between them)."""
    from simulator.charts.contracts import contracts_figure
    from simulator.studies.adversary import confirm_on_lua, schedule_of

    tables = read_tables(DATA_DIR)
    summary = pd.read_csv(DATA_DIR / "accuracy_summary.csv").iloc[1:]  # without Cloudflare's row
    worst = pd.read_csv(DATA_DIR / "adversary_worst_cases.csv", keep_default_na=False)
    column = "worst_schedule" if "worst_schedule" in worst else "schedule"
    frames = {
        row["algorithm"]: confirm_on_lua(
            row["algorithm"], schedule_of(row["algorithm"], row[column]), 100, 60_000
        )[1]
        for _, row in worst.iterrows()
        if not row["params"]
    }
    burst = pd.concat([boundary_burst(a) for a in ALGORITHMS], ignore_index=True)
    return {
        "boundary_burst": burst_charts.boundary_burst_figure(burst, 100, 60_000, 59, 61),
        "memory_per_user": memory_charts.per_user_figure(tables["per_user"]),
        "memory_encoding_cliff": memory_charts.encoding_cliff_figure(tables["encoding"]),
        "memory_bigkey": memory_charts.bigkey_figure(tables["bigkey"]),
        "accuracy_families": accuracy_charts.families_figure(summary),
        "accuracy_load_sweep": accuracy_charts.load_sweep_figure(
            pd.read_csv(DATA_DIR / "accuracy_load_sweep.csv")
        ),
        "accuracy_contracts": contracts_figure(pd.read_csv(DATA_DIR / "accuracy_contracts.csv")),
        "adversary_schedule": accuracy_charts.schedule_figure(frames, 100, 60_000),
    }


@pytest.mark.slow
def test_no_committed_figure_overprints_or_cuts_a_text():
    problems = {name: text_problems(fig) for name, fig in committed_figures().items()}
    assert not any(problems.values()), {name: p for name, p in problems.items() if p}
