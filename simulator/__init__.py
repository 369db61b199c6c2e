"""Rate-limit window workbench."""
