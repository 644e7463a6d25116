"""Build a catalog spec into a verified native service, or route it to the world model.

``build(spec, writer)`` asks a backend for the package's source (the deterministic ``template``
compiler, or a coding model through :class:`~servers.construction.llm.LLMWriter`), imports it,
verifies it (:func:`~servers.construction.verify.verify`) and then either writes it to
``servers/built/<name>/`` — mounted as a native service with source ``built`` — or removes any
earlier build of that name, so the service's tools are served by the world model
(``worldmodel.fromspec``). Either way the outcome and every failing check land in
``servers/built/report.json``, which ``compoworld services list`` and the hub read.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from servers.construction.loader import load_service
from servers.construction.spec import ServiceSpec, load_spec
from servers.construction.template import BUILT_DIR, compile_spec
from servers.construction.verify import Check, Verification, verify

Writer = Callable[[ServiceSpec], dict[str, str]]
REPORT = "report.json"
_attempts = itertools.count()


@dataclass
class BuildResult:
    name: str
    backend: str
    source: Literal["built", "simulated"]
    verification: Verification

    @property
    def ok(self) -> bool:
        return self.source == "built"

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "source": self.source, **self.verification.to_json()}


def template_writer(spec: ServiceSpec) -> dict[str, str]:
    return compile_spec(spec)


def build(
    spec: ServiceSpec,
    writer: Writer = template_writer,
    backend: str = "template",
    root: Path = BUILT_DIR,
    examples: int = 4,
    repair_rounds: int = 1,
) -> BuildResult:
    """Write, import and verify one service; keep it only if it passes (see the module docstring)."""
    try:
        files = writer(spec)
        service = load_service(files, spec.name, f"build{next(_attempts)}")
    except Exception as exc:  # the backend failed or its code does not import: nothing to mount
        failed = Verification(spec.name, failures=[Check("import", None, f"{type(exc).__name__}: {exc}")])
        return _finish(BuildResult(spec.name, backend, "simulated", failed), None, root)
    verification = verify(spec, service, examples=examples)
    revise: Callable[..., dict[str, str]] | None = getattr(writer, "revise", None)
    for _ in range(repair_rounds):
        if revise is None:
            break
        if verification.ok:
            break
        try:  # the backend sees its failing checks and tries again
            files = revise(spec, files, [str(f) for f in verification.failures])
            service = load_service(files, spec.name, f"build{next(_attempts)}")
        except Exception as exc:
            verification.failures.append(Check("import", None, f"repair: {type(exc).__name__}: {exc}"))
            break
        verification = verify(spec, service, examples=examples)
    result = BuildResult(spec.name, backend, "built" if verification.ok else "simulated", verification)
    return _finish(result, files if verification.ok else None, root)


def _finish(result: BuildResult, files: dict[str, str] | None, root: Path) -> BuildResult:
    target = root / result.name
    if target.exists():
        shutil.rmtree(target)
    if files is not None:
        target.mkdir(parents=True)
        for name, text in sorted(files.items()):
            (target / name).write_text(text)
    report = read_report(root)
    report[result.name] = result.to_json()
    (root / REPORT).write_text(json.dumps(dict(sorted(report.items())), indent=2) + "\n")
    return result


def read_report(root: Path = BUILT_DIR) -> dict[str, Any]:
    """The last build outcome of every catalog service, by name."""
    path = root / REPORT
    return json.loads(path.read_text()) if path.exists() else {}


def _template_attempt(path: Path, examples: int) -> tuple[ServiceSpec, dict[str, str] | None, Verification]:
    spec = load_spec(path)
    try:
        files = compile_spec(spec)
        service = load_service(files, spec.name, f"build{next(_attempts)}")
    except Exception as exc:
        return spec, None, Verification(spec.name, failures=[Check("import", None, f"{type(exc).__name__}: {exc}")])
    verification = verify(spec, service, examples=examples)
    return spec, files if verification.ok else None, verification


def build_catalog(paths: list[Path], root: Path = BUILT_DIR, examples: int = 4, workers: int = 2) -> list[BuildResult]:
    """Template builds of many specs, verified in ``workers`` processes; results written here."""
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    results = []
    with ProcessPoolExecutor(max(1, workers)) as pool:
        for spec, files, verification in pool.map(partial(_template_attempt, examples=examples), paths):
            source: Literal["built", "simulated"] = "built" if files is not None else "simulated"
            results.append(_finish(BuildResult(spec.name, "template", source, verification), files, root))
    return results
