"""Where the repository keeps its data: generated tables and charts, and the sample traces."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA_DIR", "APACHE_LOG"]

#: ``data/`` beside the package in a checkout (the package is installed in editable mode).
DATA_DIR = Path(__file__).resolve().parents[1] / "data"
#: The real Apache access log shipped with its attribution (``data/traces/NOTICE.md``).
APACHE_LOG = DATA_DIR / "traces" / "apache_combined_sample.log"
