"""taskgen package (see ../shared/DESIGN.md)."""
