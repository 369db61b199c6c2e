"""The explorer's controls: ipywidgets built from the registry, read back as :class:`Settings`.

Every algorithm in the registry is offered, with a box for each of its own parameters (``Param``)
whose value follows the default (computed from the limit and the window) until someone types
another. Nothing here runs anything: :meth:`Controls.settings` turns what the widgets show into a
validated :class:`~simulator.explore.settings.Settings` - or a ConfigError that names the control
as the page shows it, in its units - :meth:`Controls.apply` puts settings (a preset's) back into
the widgets, and :meth:`Controls.observe` tells the caller when any of them changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.base import Param
from simulator.checks import ConfigError
from simulator.explore.presets import SAMPLE_TRACE
from simulator.explore.settings import (
    BACKENDS,
    TRACE_FORMATS,
    Settings,
    Traffic,
    expected_requests,
)

__all__ = ["Controls", "SAMPLE_TRACE", "WINDOWS_S"]

#: The most requests a traffic mix may send each algorithm (a run of a few minutes at most).
MOST_REQUESTS = 500_000
#: Window lengths the window slider offers (seconds).
WINDOWS_S = (1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 3600.0)

_WIDE = {"description_width": "8.5em"}
_ROW = w.Layout(width="98%")


def _seconds(text: str) -> tuple[float, ...]:
    """``"9, 11"`` as ``(9.0, 11.0)``, or a ConfigError naming the field."""
    try:
        return tuple(float(part) for part in text.replace(";", ",").split(",") if part.strip())
    except ValueError:
        raise ConfigError(f"bursts at: {text!r} is not a list of seconds (e.g. 9, 11)") from None


def _count(kind: str, value: int) -> w.IntSlider:
    """How many clients of a kind."""
    return w.IntSlider(
        value=value, min=0, max=max(20, value), description=f"{kind} clients", style=_WIDE,
        layout=_ROW,
    )  # fmt: skip


def _rate(value: float, hi: float = 20.0) -> w.FloatSlider:
    """Each client's rate (requests per second)."""
    return w.FloatSlider(
        value=value, min=0, max=max(hi, value), step=0.1, description="each, req/s",
        style=_WIDE, layout=_ROW,
    )  # fmt: skip


def _number(value: float, what: str) -> w.BoundedFloatText:
    return w.BoundedFloatText(
        value=value, min=0, max=1e9, description=what, style=_WIDE, layout=_ROW
    )


def _kind(title: str, *rows: w.Widget) -> w.VBox:
    return w.VBox([w.HTML(f"<b>{title}</b>"), *rows])


class Controls:
    """The widgets, laid out in tabs (:attr:`box`); :meth:`settings` reads them."""

    def __init__(self, settings: Settings) -> None:
        self._limiter_controls(settings)
        self._param_boxes(settings)
        self._traffic_controls(settings.traffic)
        self._source_controls(settings)
        self.client = w.Dropdown(
            options=[],
            description="client shown",
            style={"description_width": "initial"},
            layout=w.Layout(width="17em"),
        )
        self.box = self._tabs()

    def _limiter_controls(self, s: Settings) -> None:
        """The algorithms (every one registered), the limit, the window and the backend."""
        self.algorithms = w.SelectMultiple(
            options=[(cls.label, name) for name, cls in ALGORITHMS.items()],
            value=tuple(a for a in s.algorithms if a in ALGORITHMS),
            rows=len(ALGORITHMS),
            description="algorithms",
            style=_WIDE,
            layout=_ROW,
        )
        self.limit = w.IntSlider(
            value=s.limit,
            min=0,  # 0 is said to be wrong rather than silently made 1
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

    def _param_boxes(self, s: Settings) -> None:
        """A box for each parameter of each registered algorithm, at its default unless the
        settings give it; the declarations kept, so the boxes never look a name up again."""
        self.params: dict[tuple[str, str], w.ValueWidget] = {}
        self._declared: dict[tuple[str, str], Param] = {}
        self._defaults: dict[tuple[str, str], float] = {}
        for name, cls in ALGORITHMS.items():
            for p in cls.params_declared:
                given = s.params.get(name, {}).get(p.name)
                default = p.default(s.limit, s.window_ms)
                box = w.IntText if p.integer else w.FloatText
                label = f"{name}: {p.name}" + (f" ({p.unit})" if p.unit else "")
                self.params[(name, p.name)] = box(
                    value=default if given is None else given,
                    description=label,
                    tooltip=label,  # the whole label on hover, where the column cuts it
                    description_allow_html=False,
                    style={"description_width": "14em"},
                    layout=_ROW,
                )
                self._declared[(name, p.name)] = p
                self._defaults[(name, p.name)] = default

    def _traffic_controls(self, t: Traffic) -> None:
        """Each kind of client: how many, and its rates."""
        self.steady, self.steady_rate = _count("steady", t.steady), _rate(t.steady_rate_per_s)
        self.poisson, self.poisson_rate = _count("Poisson", t.poisson), _rate(t.poisson_rate_per_s)
        self.bursts = _count("bursts", t.bursts)
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
        self.on_off, self.on_off_rate = _count("on/off", t.on_off), _rate(t.on_off_rate_per_s)
        self.on_s, self.off_s = _number(t.on_s, "on for (s)"), _number(t.off_s, "off for (s)")
        self.polite, self.polite_rate = _count("polite", t.polite), _rate(t.polite_rate_per_s)

    def _source_controls(self, s: Settings) -> None:
        """Where the requests come from: the mix for a duration and seed, or a trace file."""
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
            value=s.trace if s.trace is not None else str(SAMPLE_TRACE),
            description="trace file",
            style=_WIDE,
            layout=_ROW,
        )
        self.trace_from_s = _number(s.trace_from_s, "from (s in)")
        # A trace is explored a slice at a time: ten minutes unless the settings say otherwise.
        span_s = s.trace_span_s if s.trace is not None else 600.0
        self.trace_span_s = _number(span_s, "span (s, 0: all)")
        self.trace_format = w.Dropdown(
            options=[(label, name) for name, label in TRACE_FORMATS.items()],
            value=s.trace_format if s.trace else "clf",
            description="format",
            style=_WIDE,
            layout=_ROW,
        )

    def _tabs(self) -> w.Tab:
        """The controls in three tabs: the limiter, the traffic, the source."""
        limiter = w.VBox(
            [self.algorithms, self.limit, self.window_s, *self.params.values(), self.backend]
        )
        mix = w.VBox(
            [
                _kind("bursts", self.bursts, self.burst_n, self.burst_at),
                _kind("steady", self.steady, self.steady_rate),
                _kind("Poisson", self.poisson, self.poisson_rate),
                _kind("polite (waits Retry-After)", self.polite, self.polite_rate),
                _kind("on/off (Poisson while on)", self.on_off, self.on_off_rate, self.on_s),
                self.off_s,
            ]
        )
        run = w.VBox(
            [
                self.source,
                self.duration_s,
                self.seed,
                self.trace,
                self.trace_format,
                self.trace_from_s,
                self.trace_span_s,
            ]
        )
        box = w.Tab(children=[limiter, mix, run], layout=w.Layout(width="100%"))
        for i, title in enumerate(("limiter", "traffic", "source")):
            box.set_title(i, title)
        return box

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
            self.trace_from_s,
            self.trace_span_s,
        ]

    def observe(self, handler: Callable[[Any], None]) -> None:
        """``handler(change)`` after any control changes (the client shown included)."""
        for widget in [*self.inputs(), self.client]:
            widget.observe(handler, names="value")

    def follow_defaults(self) -> None:
        """Parameters still at their default take the new default of the limit and window."""
        limit, window_ms = self.limit.value, round(self.window_s.value * 1000)
        for (name, param), widget in self.params.items():
            new = self._declared[(name, param)].default(limit, window_ms)
            if widget.value == self._defaults[(name, param)]:
                widget.value = new
            self._defaults[(name, param)] = new

    def apply(self, settings: Settings) -> None:
        """Show ``settings`` in the widgets (a preset): every control, parameters at their
        defaults unless given."""
        s, t = settings, settings.traffic
        self.algorithms.value = tuple(a for a in s.algorithms if a in ALGORITHMS)
        self.limit.max = max(self.limit.max, 2 * s.limit)
        self.limit.value = s.limit
        if float(s.window_s) not in [v for _, v in self.window_s.options]:
            windows = sorted({*(v for _, v in self.window_s.options), float(s.window_s)})
            self.window_s.options = [(f"{x:g} s", x) for x in windows]
        self.window_s.value = float(s.window_s)
        self.backend.value = s.backend
        for (name, param), widget in self.params.items():
            default = self._declared[(name, param)].default(s.limit, s.window_ms)
            widget.value = s.params.get(name, {}).get(param, default)
            self._defaults[(name, param)] = default
        for kind in ("steady", "poisson", "bursts", "on_off", "polite"):
            slider = getattr(self, kind)
            slider.max = max(slider.max, getattr(t, kind))
            slider.value = getattr(t, kind)
        for kind in ("steady", "poisson", "on_off", "polite"):
            slider = getattr(self, f"{kind}_rate")
            rate = getattr(t, f"{kind}_rate_per_s")
            slider.max = max(slider.max, rate)
            slider.value = rate
        self.burst_n.max = max(self.burst_n.max, t.burst_n)
        self.burst_n.value = t.burst_n
        self.burst_at.value = ", ".join(f"{x:g}" for x in t.burst_at_s)
        self.on_s.value, self.off_s.value = t.on_s, t.off_s
        self.duration_s.max = max(self.duration_s.max, round(s.duration_s))
        self.duration_s.value = round(s.duration_s)
        self.seed.value = s.seed
        if s.trace is not None:
            self.trace.value = s.trace
            self.trace_format.value = s.trace_format
        self.trace_from_s.value, self.trace_span_s.value = s.trace_from_s, s.trace_span_s
        self.source.value = "trace file" if s.trace is not None else "traffic mix"

    def settings(self) -> Settings:
        """What the controls show, validated: a ConfigError naming the control otherwise."""
        limit = self.limit.value
        if limit < 1:
            raise ConfigError(
                f"limit (requests): at least 1 per window, got {limit} (a limit of 0 would "
                "refuse every request)"
            )
        if not self.algorithms.value:
            raise ConfigError("algorithms: choose at least one")
        try:
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
        except ConfigError as exc:
            raise ConfigError(self._named(str(exc))) from None
        params: dict[str, dict[str, float]] = {}
        for (name, param), widget in self.params.items():
            params.setdefault(name, {})[param] = widget.value
        from_trace = self.source.value == "trace file"
        try:  # each algorithm chosen is resolved here, its parameters checked, once
            settings = Settings(
                algorithms=tuple(self.algorithms.value),
                limit=limit,
                window_s=self.window_s.value,
                params=params,
                traffic=traffic,
                duration_s=self.duration_s.value,
                seed=self.seed.value,
                trace=self.trace.value.strip() if from_trace else None,
                trace_format=self.trace_format.value,
                trace_from_s=self.trace_from_s.value,
                trace_span_s=self.trace_span_s.value,
                backend=self.backend.value,
            )
        except ConfigError as exc:
            raise ConfigError(self._named(str(exc))) from None
        if not from_trace and (n := expected_requests(settings)) > MOST_REQUESTS:
            raise ConfigError(
                f"traffic: about {n:,.0f} requests for each algorithm, at most "
                f"{MOST_REQUESTS:,} here (shorten the duration (s) or lower the clients or rates)"
            )
        return settings

    def _named(self, message: str) -> str:
        """A validator's message with the control's name and unit as the page shows them."""
        where, _, rest = message.partition(": ")
        owner, _, field = where.partition(".")
        found = _CONTROLS.get((owner, field))
        if found is not None:
            label, widget_name = found
            value = getattr(self, widget_name).value
            what = re.sub(r"\s+and <= [\d,.]+", "", rest.split(", got ")[0])
            return f"{label}: {what}, got {value}"
        m = re.match(r"params\['(\w+)'\]", field)
        if m and any(name == owner for name, _ in self._declared):
            p = self._declared.get((owner, m.group(1)))
            unit = f" ({p.unit})" if p is not None and p.unit else ""
            return f"{owner}: {m.group(1)}{unit}: {rest}"
        return message


#: Validators' field names -> the control as the page names it, and the widget holding it.
_CONTROLS = {
    ("ConstantRate", "rate_per_s"): ("steady: each, req/s", "steady_rate"),
    ("Poisson", "rate_per_s"): ("Poisson: each, req/s", "poisson_rate"),
    ("OnOff", "rate_per_s"): ("on/off: each, req/s", "on_off_rate"),
    ("OnOff", "on_ms"): ("on/off: on for (s)", "on_s"),
    ("OnOff", "off_ms"): ("on/off: off for (s)", "off_s"),
    ("Polite", "rate_per_s"): ("polite: each, req/s", "polite_rate"),
    ("BurstAt", "n"): ("bursts: requests each", "burst_n"),
    ("BurstAt", "at_s"): ("bursts: at seconds", "burst_at"),
}
