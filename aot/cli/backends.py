"""``aot backends``: the installed backends and what each takes."""

from __future__ import annotations

import argparse
import json
import sys

from aot.cli.common import add_json_option

HELP = "list the installed accelerator backends and the operators each takes"

DESCRIPTION = """\
List every backend aot can put operators on: the built-in CPU backend (it takes every
operator no accelerator takes) and every accelerator installed through the 'aot.backends'
entry points. For each: its target (what a pool's TARGETS names), the patterns it
registers and the operator kinds they take. 'aot build --accelerator NAME' uses one;
the board must declare it (its YAML's 'accelerators', see 'aot boards'). A backend
whose package fails to import or to describe itself is listed with its error; only
builds that name it fail.

examples:
  aot backends
  aot backends --json
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "backends",
        help=HELP,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_json_option(parser)
    parser.set_defaults(func=run)


def describe_backends() -> list[dict[str, object]]:
    import aot.kernels  # noqa: F401  (registers the kernel backend)
    from aot.backends import CPU_TARGET, backends, get_backend
    from aot.backends.base import backend_hook
    from aot.errors import AotError

    rows: list[dict[str, object]] = []
    for name in sorted(backends.names(), key=lambda n: (n != CPU_TARGET, n)):
        try:
            backend = get_backend(name)
            with backend_hook(backend, "patterns()"):
                patterns = list(backend.patterns())
            with backend_hook(backend, "describe()"):
                takes = list(backend.describe())
        except AotError as err:
            # A broken plug-in is listed, not fatal: only the builds that name it fail.
            rows.append({"name": name, "builtin": False, "error": str(err)})
            continue
        rows.append(
            {
                "name": name,
                "target": backend.target,
                "description": backend.description,
                "builtin": type(backend).__module__.startswith("aot."),
                "patterns": [{"name": p.name, "kinds": list(p.kinds)} for p in patterns],
                "takes": takes,
            }
        )
    return rows


def run(args: argparse.Namespace) -> int:
    rows = describe_backends()
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    for row in rows:
        if "error" in row:
            print(f"{row['name']}  (broken): {row['error']}")
            continue
        origin = "built in" if row["builtin"] else "installed"
        print(f"{row['name']}  (target {row['target']}, {origin}): {row['description']}")
        for line in row["takes"]:  # type: ignore[attr-defined]
            print(f"  {line}")
    return 0
