"""Services built from ``servers/catalog`` specs by ``compoworld services build`` (one package each).

Only verified builds are here; ``report.json`` records every build's outcome and failing checks.
Do not edit a built package by hand: change its spec and rebuild.
"""
