"""Charts: decision logs and metric frames in, matplotlib Figures out.

One colour and one display name per algorithm, used by every chart and notebook. Charts compute
nothing a metric could; they lay out what :mod:`simulator.metrics` produced.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.palette import ROLE_COLOURS, check_colours
from simulator.policy import lookup

__all__ = [
    "PALETTE",
    "LABELS",
    "ROLE_COLOURS",
    "order",
    "save",
    "subplots",
]


class _Palette(Mapping[str, str]):
    """An algorithm's colour from the registry, or a role's from :data:`ROLE_COLOURS`; the
    registry's colours are held to the colour rule (:mod:`simulator.algorithms.palette`) first."""

    def __getitem__(self, name: str) -> str:
        check_colours({n: cls.colour for n, cls in ALGORITHMS.items()}, ROLE_COLOURS)
        if name not in ALGORITHMS:
            return ROLE_COLOURS[name]
        return lookup(name, owner="PALETTE").colour  # the class carries its colour

    def __iter__(self) -> Iterator[str]:
        return iter([*ALGORITHMS, *ROLE_COLOURS])

    def __len__(self) -> int:
        return len(ALGORITHMS) + len(ROLE_COLOURS)


class _Labels(Mapping[str, str]):
    def __getitem__(self, name: str) -> str:
        if name not in ALGORITHMS:
            raise KeyError(name)
        return lookup(name, owner="LABELS").label  # the class carries its label

    def __iter__(self) -> Iterator[str]:
        return iter(ALGORITHMS)

    def __len__(self) -> int:
        return len(ALGORITHMS)


#: One colour per algorithm (and per role), on every chart and notebook.
PALETTE: Mapping[str, str] = _Palette()
#: One display name per algorithm.
LABELS: Mapping[str, str] = _Labels()


def order() -> tuple[str, ...]:
    """The algorithms in the order charts show them: the registry's."""
    return tuple(ALGORITHMS)


plt.rcParams.update(
    {
        "figure.dpi": 100,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "svg.hashsalt": "ratelimit-workbench",  # same chart, same SVG bytes
    }
)


def subplots(*args: Any, **kwargs: Any) -> tuple[Figure, Any]:
    """Like ``plt.subplots`` but outside pyplot's registry, so a notebook shows the figure once
    (as the cell's value) and a long run does not keep every figure alive."""
    fig = Figure(figsize=kwargs.pop("figsize", None))
    return fig, fig.subplots(*args, **kwargs)


def save(fig: Figure, name: str, out_dir: str | Path = "data") -> list[Path]:
    """Write ``name``.png and ``name``.svg under ``out_dir``; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    fig.savefig(paths[0], dpi=100, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None})
    return paths
