"""A cached virtual environment with verl and CompoWorld, for the verl adapter's tests.

verl 0.9.1 pins ``transformers<5.11`` while our training extra resolves a newer one, so verl lives in its own
environment (``.venvs/verl`` in the repository, or ``$COMPOWORLD_VENVS/verl``): CPU torch first (so pip never
pulls a CUDA build), then this checkout with its ``verl`` extra (editable, so the tests run the code under test),
as the README tells a user. It is rebuilt only when what it was built from changes (the key file hashes the torch
pin, our dependencies and the verl extra); a build takes about 2-3 minutes on a 2-core machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TORCH = "torch==2.13.0"  # the CPU build; installed first so verl's torch requirement is already met


def _key() -> str:
    """What the environment is built from: the torch pin, our dependencies and the verl extra (not all of pyproject)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    payload = {
        "python": sys.version_info[:2],
        "torch": TORCH,
        "dependencies": project["dependencies"],
        "verl": project["optional-dependencies"]["verl"],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def verl_python() -> Path:
    """The interpreter of the verl environment, building it first when it is missing or stale."""
    root = Path(os.environ.get("COMPOWORLD_VENVS", REPO / ".venvs")) / "verl"
    python = root / "bin" / "python"
    key = _key()
    key_file = root / "compoworld-key"
    if python.exists() and key_file.exists() and key_file.read_text() == key:
        return python
    # The key file is written last: an interrupted build has none and is built again from scratch.
    shutil.rmtree(root, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, TORCH], check=True, timeout=1200)
    subprocess.run([*pip, "-e", f"{REPO}[verl]"], check=True, timeout=1200)  # the README's `.[verl]` extra
    key_file.write_text(key)
    return python
