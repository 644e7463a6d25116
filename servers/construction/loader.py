"""Import a built service from its source files without installing them."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from servers.framework import Service


def load_package(path: Path, module_name: str) -> ModuleType:
    """Import the package in directory ``path`` as ``module_name`` (relative imports work)."""
    spec = importlib.util.spec_from_file_location(
        module_name, path / "__init__.py", submodule_search_locations=[str(path)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    for name in [m for m in sys.modules if m == module_name or m.startswith(module_name + ".")]:
        del sys.modules[name]  # a rebuilt package must not reuse the submodules of an earlier load
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        for name in [m for m in sys.modules if m == module_name or m.startswith(module_name + ".")]:
            del sys.modules[name]
        raise
    return module


def load_service(files: dict[str, str], name: str, tag: str = "candidate") -> Service[Any]:
    """The ``service`` defined by source ``files`` (``__init__.py`` and optional siblings)."""
    root = Path(tempfile.mkdtemp(prefix=f"compoworld-{name}-"))
    for file_name, text in files.items():
        (root / file_name).write_text(text)
    module = load_package(root, f"_compoworld_{tag}_{name}")
    service = getattr(module, "service", None)
    if not isinstance(service, Service):
        raise ImportError(f"the built module of {name!r} defines no module-level `service`")
    return service
