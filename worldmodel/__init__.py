"""worldmodel package (see ../shared/DESIGN.md)."""
