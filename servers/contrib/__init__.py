"""Services written in Python by the ``llm`` construction backend and verified against their spec.

Each package ``servers/contrib/<name>/`` replaces the spec-run service of the same name and keeps
its provenance (model, prompt hash, spec hash, verification report) in ``provenance.json``; see
:mod:`servers.construction.pipeline`.
"""
