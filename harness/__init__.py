"""harness package (see ../shared/DESIGN.md)."""
