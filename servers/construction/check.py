"""``python -m servers.construction.check SPEC...``: compile specs with the template backend and verify them."""

from __future__ import annotations

import sys

from servers.construction.loader import load_service
from servers.construction.spec import load_spec
from servers.construction.template import compile_spec
from servers.construction.verify import verify


def main(argv: list[str]) -> int:
    failed = 0
    for path in argv:
        spec = load_spec(path)
        service = load_service(compile_spec(spec, formatted=False), spec.name, "check")
        report = verify(spec, service, examples=4)
        print(report.summary())
        failed += not report.ok
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
