"""hub package (see ../shared/DESIGN.md)."""
