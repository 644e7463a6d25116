"""Turn a tool specification into a verified service.

Two backends, one verification (:func:`~servers.construction.verify.verify`: conformance, spec
conformance and the generated scenarios):

- ``spec`` (the default): the service *is* its spec. :func:`build_spec` validates a spec file
  (spec lint included), runs it through the spec engine, verifies the result and, when it passes,
  places the file in ``servers/catalog/`` — nothing else is written; the service is registered
  from then on. A failing spec is refused with every failing check.
- ``llm``: for behaviour the spec format cannot express, a coding model writes Python
  (:class:`~servers.construction.llm.LLMWriter`); the package is verified against the spec (the
  engine's behaviour is the reference) and kept in ``servers/contrib/<name>/`` with
  ``provenance.json`` (model, prompt hash, spec hash, verification report), replacing the
  spec-run service of that name. A package that fails verification is not kept: the spec-run
  service stays.

Every ``llm`` outcome lands in ``servers/contrib/report.json``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from servers.construction.loader import load_service
from servers.construction.spec import CATALOG_DIR, ServiceSpec, load_spec
from servers.construction.verify import Check, Verification, verify
from servers.engine import build_service, spec_digest

Writer = Callable[[ServiceSpec], dict[str, str]]
REPORT = "report.json"
CONTRIB_DIR = Path(__file__).resolve().parents[1] / "contrib"
_attempts = itertools.count()
SIMULATED = (
    "a simulated spec has no offline implementation to build: the world model serves it from "
    "worldmodel/specs/ (compoworld worldmodel check NAME)"
)


@dataclass
class BuildResult:
    name: str
    backend: str
    kept: bool
    verification: Verification
    where: str = ""

    @property
    def ok(self) -> bool:
        return self.kept

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "kept": self.kept, "where": self.where, **self.verification.to_json()}


def build_spec(path: Path, catalog: Path = CATALOG_DIR, examples: int = 4) -> BuildResult:
    """Validate, run and verify one spec file; copy it into ``catalog`` when it passes."""
    try:
        spec = load_spec(path)
        if spec.simulated:
            raise ValueError(SIMULATED)
        service = build_service(spec)
    except Exception as exc:  # an invalid spec: nothing to keep
        name = Path(path).stem
        failed = Verification(name, failures=[Check("spec", None, f"{type(exc).__name__}: {exc}")])
        return BuildResult(name, "spec", False, failed)
    verification = verify(spec, service, examples=examples)
    target = catalog / f"{spec.name}.json"
    if verification.ok and Path(path).resolve() != target.resolve():
        target.write_text(Path(path).read_text())
    return BuildResult(spec.name, "spec", verification.ok, verification, str(target) if verification.ok else "")


def build(
    spec: ServiceSpec,
    writer: Writer,
    backend: str = "llm",
    root: Path = CONTRIB_DIR,
    examples: int = 4,
    repair_rounds: int = 1,
) -> BuildResult:
    """Write, import and verify a Python package for ``spec``; keep it in ``root`` only if it passes."""
    if spec.simulated:
        return BuildResult(
            spec.name, backend, False, Verification(spec.name, failures=[Check("spec", None, SIMULATED)])
        )
    try:
        files = writer(spec)
        service = load_service(files, spec.name, f"build{next(_attempts)}")
    except Exception as exc:  # the backend failed or its code does not import: nothing to keep
        failed = Verification(spec.name, failures=[Check("import", None, f"{type(exc).__name__}: {exc}")])
        return _finish(BuildResult(spec.name, backend, False, failed), None, root, writer, spec)
    verification = verify(spec, service, examples=examples)
    revise: Callable[..., dict[str, str]] | None = getattr(writer, "revise", None)
    for _ in range(repair_rounds):
        if revise is None or verification.ok:
            break
        try:  # the backend sees its failing checks and tries again
            files = revise(spec, files, [str(f) for f in verification.failures])
            service = load_service(files, spec.name, f"build{next(_attempts)}")
        except Exception as exc:
            verification.failures.append(Check("import", None, f"repair: {type(exc).__name__}: {exc}"))
            break
        verification = verify(spec, service, examples=examples)
    result = BuildResult(spec.name, backend, verification.ok, verification)
    return _finish(result, files if verification.ok else None, root, writer, spec)


def _finish(
    result: BuildResult, files: dict[str, str] | None, root: Path, writer: Writer, spec: ServiceSpec
) -> BuildResult:
    target = root / result.name
    if files is not None:
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for name, text in sorted(files.items()):
            (target / name).write_text(text)
        prompt = getattr(writer, "last_prompt", None)
        provenance = {
            "backend": result.backend,
            "model": getattr(writer, "model", None),
            "prompt_sha256": hashlib.sha256(json.dumps(prompt, sort_keys=True).encode()).hexdigest()
            if prompt is not None
            else None,
            "spec": spec.name,
            "spec_hash": spec_digest(spec),
            "verification": result.verification.to_json(),
        }
        (target / "provenance.json").write_text(json.dumps(provenance, indent=2) + "\n")
        result.where = str(target)
    return _record(result, root)


def _record(result: BuildResult, root: Path) -> BuildResult:
    report = read_report(root)
    report[result.name] = result.to_json()
    root.mkdir(parents=True, exist_ok=True)
    (root / REPORT).write_text(json.dumps(dict(sorted(report.items())), indent=2) + "\n")
    return result


def read_report(root: Path = CONTRIB_DIR) -> dict[str, Any]:
    """The last build outcome of every service built into ``root``, by name."""
    path = root / REPORT
    return json.loads(path.read_text()) if path.exists() else {}


def build_specs(
    paths: list[Path], catalog: Path = CATALOG_DIR, examples: int = 4, workers: int = 2
) -> list[BuildResult]:
    """:func:`build_spec` over many files, verified in ``workers`` processes."""
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    if workers <= 1:
        return [build_spec(p, catalog, examples) for p in paths]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(partial(build_spec, catalog=catalog, examples=examples), paths))


Backend = Literal["spec", "llm"]
