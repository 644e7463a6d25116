"""training package (see ../shared/DESIGN.md)."""
