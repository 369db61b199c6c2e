"""Importing this registers the toy algorithm (what a contributor's three steps do).

The script is made known by name (in the package it would simply be
``simulator/algorithms/lua/toy.lua``), then the one registry line.
"""

from __future__ import annotations

from pathlib import Path

from simulator.algorithms import ALGORITHMS, scripts
from toy.algorithm import Toy

scripts.add("toy", (Path(__file__).parent / "toy.lua").read_text("utf-8"))
ALGORITHMS[Toy.name] = Toy
