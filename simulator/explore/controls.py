"""The explorer's controls: ipywidgets built from the registry, read back as :class:`Settings`.

Every algorithm in the registry is offered, with a box for each of its own parameters (``Param``)
whose value follows the default (computed from the limit and the window) until someone types
another. Nothing here runs anything: :meth:`Controls.settings` turns what the widgets show into a
validated :class:`~simulator.explore.settings.Settings`, and :meth:`Controls.observe` tells the
caller when any of them changes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import ipywidgets as w

from simulator.algorithms import ALGORITHMS
from simulator.checks import ConfigError
from simulator.explore.settings import BACKENDS, TRACE_FORMATS, Settings, Traffic

__all__ = ["Controls", "SAMPLE_TRACE", "WINDOWS_S"]

#: The access log shipped with the project, offered as the trace to replay.
SAMPLE_TRACE = (
    Path(__file__).resolve().parents[2] / "data" / "traces" / "apache_combined_sample.log"
)
#: Window lengths the window slider offers (seconds).
WINDOWS_S = (1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 3600.0)

_WIDE = {"description_width": "11em"}
_ROW = w.Layout(width="31em")


def _seconds(text: str) -> tuple[float, ...]:
    """``"9, 11"`` as ``(9.0, 11.0)``, or a ConfigError naming the field."""
    try:
        return tuple(float(part) for part in text.replace(";", ",").split(",") if part.strip())
    except ValueError:
        raise ConfigError(f"bursts at: {text!r} is not a list of seconds (e.g. 9, 11)") from None


class Controls:
    """The widgets, laid out in tabs (:attr:`box`); :meth:`settings` reads them."""

    def __init__(self, settings: Settings) -> None:
        s, t = settings, settings.traffic
        self.algorithms = w.SelectMultiple(
            options=[(cls.label, name) for name, cls in ALGORITHMS.items()],
            value=tuple(a for a in s.algorithms if a in ALGORITHMS),
            rows=len(ALGORITHMS),
            description="algorithms",
            style=_WIDE,
            layout=w.Layout(width="31em"),
        )
        self.limit = w.IntSlider(
            value=s.limit,
            min=1,
            max=max(200, 2 * s.limit),
            description="limit (requests)",
            style=_WIDE,
            layout=_ROW,
        )
        windows = sorted({*WINDOWS_S, float(s.window_s)})
        self.window_s = w.SelectionSlider(
            options=[(f"{x:g} s", x) for x in windows],
            value=float(s.window_s),
            description="window",
            style=_WIDE,
            layout=_ROW,
        )
        self.backend = w.Dropdown(
            options=[(label, name) for name, label in BACKENDS.items()],
            value=s.backend,
            description="backend",
            style=_WIDE,
            layout=_ROW,
        )
        self.params: dict[tuple[str, str], w.ValueWidget] = {}
        self._defaults: dict[tuple[str, str], float] = {}
        for name, cls in ALGORITHMS.items():
            for p in cls.params_declared:
                given = s.params.get(name, {}).get(p.name)
                default = p.default(s.limit, s.window_ms)
                box = w.IntText if p.integer else w.FloatText
                widget = box(
                    value=default if given is None else given,
                    description=f"{name}: {p.name}" + (f" ({p.unit})" if p.unit else ""),
                    style=_WIDE,
                    layout=_ROW,
                )
                self.params[(name, p.name)] = widget
                self._defaults[(name, p.name)] = default

        def count(kind: str, value: int) -> w.IntSlider:
            return w.IntSlider(
                value=value,
                min=0,
                max=max(20, value),
                description=f"{kind} clients",
                style=_WIDE,
                layout=_ROW,
            )

        def rate(value: float, hi: float = 20.0) -> w.FloatSlider:
            return w.FloatSlider(
                value=value,
                min=0,
                max=max(hi, value),
                step=0.1,
                description="each, req/s",
                style=_WIDE,
                layout=_ROW,
            )

        def number(value: float, what: str) -> w.BoundedFloatText:
            return w.BoundedFloatText(
                value=value, min=0, max=1e9, description=what, style=_WIDE, layout=_ROW
            )

        self.steady, self.steady_rate = count("steady", t.steady), rate(t.steady_rate_per_s)
        self.poisson, self.poisson_rate = count("Poisson", t.poisson), rate(t.poisson_rate_per_s)
        self.bursts = count("bursts", t.bursts)
        self.burst_n = w.IntSlider(
            value=t.burst_n,
            min=0,
            max=max(500, t.burst_n),
            description="requests each",
            style=_WIDE,
            layout=_ROW,
        )
        self.burst_at = w.Text(
            value=", ".join(f"{x:g}" for x in t.burst_at_s),
            description="at seconds",
            style=_WIDE,
            layout=_ROW,
        )
        self.on_off, self.on_off_rate = count("on/off", t.on_off), rate(t.on_off_rate_per_s)
        self.on_s, self.off_s = number(t.on_s, "on for (s)"), number(t.off_s, "off for (s)")
        self.polite, self.polite_rate = count("polite", t.polite), rate(t.polite_rate_per_s)
        self.duration_s = w.IntSlider(
            value=round(s.duration_s),
            min=1,
            max=max(3600, round(s.duration_s)),
            description="duration (s)",
            style=_WIDE,
            layout=_ROW,
        )
        self.seed = w.BoundedIntText(
            value=s.seed, min=0, max=2**31, description="seed", style=_WIDE, layout=_ROW
        )
        self.source = w.ToggleButtons(
            options=["traffic mix", "trace file"],
            value="trace file" if s.trace else "traffic mix",
            description="requests from",
            style=_WIDE,
        )
        self.trace = w.Text(
            value=s.trace or str(SAMPLE_TRACE),
            description="trace file",
            style=_WIDE,
            layout=w.Layout(width="62em"),
        )
        self.trace_format = w.Dropdown(
            options=[(label, name) for name, label in TRACE_FORMATS.items()],
            value=s.trace_format if s.trace else "clf",
            description="format",
            style=_WIDE,
            layout=_ROW,
        )
        self.client = w.Dropdown(options=[], description="client shown", style=_WIDE, layout=_ROW)

        def kind(title: str, *rows: w.Widget) -> w.VBox:
            return w.VBox([w.HTML(f"<b>{title}</b>"), *rows])

        limiter = w.HBox(
            [
                w.VBox([self.algorithms, self.backend]),
                w.VBox([self.limit, self.window_s, *self.params.values()]),
            ]
        )
        mix = w.HBox(
            [
                w.VBox(
                    [
                        kind("steady", self.steady, self.steady_rate),
                        kind("Poisson", self.poisson, self.poisson_rate),
                        kind("polite (waits Retry-After)", self.polite, self.polite_rate),
                    ]
                ),
                w.VBox(
                    [
                        kind("bursts", self.bursts, self.burst_n, self.burst_at),
                        kind(
                            "on/off (Poisson while on)",
                            self.on_off,
                            self.on_off_rate,
                            self.on_s,
                            self.off_s,
                        ),
                    ]
                ),
            ]
        )
        run = w.VBox([self.source, self.duration_s, self.seed, self.trace, self.trace_format])
        self.box = w.Tab(children=[limiter, mix, run])
        for i, title in enumerate(("limiter", "traffic mix", "run and source")):
            self.box.set_title(i, title)

    def inputs(self) -> list[w.ValueWidget]:
        """Every widget whose value changes the run (the client shown changes only the view)."""
        return [
            self.algorithms,
            self.limit,
            self.window_s,
            self.backend,
            *self.params.values(),
            self.steady,
            self.steady_rate,
            self.poisson,
            self.poisson_rate,
            self.bursts,
            self.burst_n,
            self.burst_at,
            self.on_off,
            self.on_off_rate,
            self.on_s,
            self.off_s,
            self.polite,
            self.polite_rate,
            self.duration_s,
            self.seed,
            self.source,
            self.trace,
            self.trace_format,
        ]

    def observe(self, handler: Callable[[Any], None]) -> None:
        """``handler(change)`` after any control changes (the client shown included)."""
        for widget in [*self.inputs(), self.client]:
            widget.observe(handler, names="value")

    def follow_defaults(self) -> None:
        """Parameters still at their default take the new default of the limit and window."""
        limit, window_ms = self.limit.value, round(self.window_s.value * 1000)
        for (name, param), widget in self.params.items():
            declared = {p.name: p for p in ALGORITHMS[name].params_declared}[param]
            new = declared.default(limit, window_ms)
            if widget.value == self._defaults[(name, param)]:
                widget.value = new
            self._defaults[(name, param)] = new

    def settings(self) -> Settings:
        """What the controls show, validated (ConfigError naming the field otherwise)."""
        traffic = Traffic(
            steady=self.steady.value,
            steady_rate_per_s=self.steady_rate.value,
            poisson=self.poisson.value,
            poisson_rate_per_s=self.poisson_rate.value,
            bursts=self.bursts.value,
            burst_n=self.burst_n.value,
            burst_at_s=_seconds(self.burst_at.value),
            on_off=self.on_off.value,
            on_off_rate_per_s=self.on_off_rate.value,
            on_s=self.on_s.value,
            off_s=self.off_s.value,
            polite=self.polite.value,
            polite_rate_per_s=self.polite_rate.value,
        )
        params: dict[str, dict[str, float]] = {}
        for (name, param), widget in self.params.items():
            params.setdefault(name, {})[param] = widget.value
        from_trace = self.source.value == "trace file"
        return Settings(
            algorithms=tuple(self.algorithms.value),
            limit=self.limit.value,
            window_s=self.window_s.value,
            params=params,
            traffic=traffic,
            duration_s=self.duration_s.value,
            seed=self.seed.value,
            trace=self.trace.value.strip() if from_trace else None,
            trace_format=self.trace_format.value,
            backend=self.backend.value,
        )
