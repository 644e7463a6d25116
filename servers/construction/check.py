"""``python -m servers.construction.check SPEC...``: run spec files through the engine and verify them."""

from __future__ import annotations

import sys

from servers.construction.spec import load_spec
from servers.construction.verify import verify
from servers.engine import build_service


def main(argv: list[str]) -> int:
    failed = 0
    for path in argv:
        spec = load_spec(path)
        report = verify(spec, build_service(spec), examples=4)
        print(report.summary())
        failed += not report.ok
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
