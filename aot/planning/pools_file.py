"""Workspace pools from the command line and from a JSON pools file.

Both forms give pools fastest first, which is the order the planners fill them in:

    --pool NAME:SIZE[:TARGETS]        e.g. --pool dtcm:16K:cpu --pool sram:1M
    --pool-file pools.json            e.g. [{"name": "dtcm", "size": "16K", "targets": ["cpu"]},
                                            {"name": "sram", "size": 1048576}]

SIZE is bytes, or a number with a K, M or G suffix (binary: "16K", "16KiB", "1M"). TARGETS
names what may access the pool (default "cpu"); it is recorded in metadata.json for the
project and for accelerator backends, and does not change the plan. Every problem is one
ConfigError that names the argument or the file and what was expected.

This module builds ``aot.planning.model.PoolSpec`` objects; the planners never import it,
so they stay free of command-line parsing. Sizes follow ``aot.sizes`` (the grammar board
YAML uses too).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aot.errors import ConfigError
from aot.planning.model import DEFAULT_TARGETS, PoolSpec
from aot.sizes import size_or_none

NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
POOL_KEYS = ("name", "size", "targets")
POOL_FILE_EXAMPLE = (
    '[{"name": "dtcm", "size": "16K", "targets": ["cpu"]}, {"name": "sram", "size": "1M"}]'
)


def _json_kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")


def _targets_problem(targets: Sequence[str]) -> str | None:
    if not targets:
        return "an empty targets list"
    bad = [t for t in targets if not NAME_PATTERN.fullmatch(t)]
    if bad:
        return f"target name(s) {', '.join(repr(t) for t in bad)}"
    if len(set(targets)) != len(targets):
        return f"repeated targets {', '.join(targets)}"
    return None


def parse_pool_arg(text: str) -> PoolSpec:
    """``NAME:SIZE`` or ``NAME:SIZE:TARGET[,TARGET...]`` (the --pool option)."""
    usage = (
        f"pool '{text}' is not NAME:SIZE[:TARGETS] (for example --pool sram:64K, "
        "--pool dtcm:16384 or --pool dtcm:16K:cpu)"
    )
    parts = text.split(":")
    if len(parts) not in (2, 3) or not NAME_PATTERN.fullmatch(parts[0]):
        raise ConfigError(usage)
    size = size_or_none(parts[1])
    if size is None:
        raise ConfigError(usage)
    targets: tuple[str, ...] = DEFAULT_TARGETS
    if len(parts) == 3:
        targets = tuple(t.strip().lower() for t in parts[2].split(","))
        problem = _targets_problem(targets)
        if problem:
            raise ConfigError(f"{usage}: {problem}")
    return PoolSpec(parts[0].lower(), size, targets)


def check_unique(pools: Sequence[PoolSpec], where: str) -> None:
    names = [p.name for p in pools]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(
            f"{where}: pool names must be unique; '{', '.join(repeated)}' is given "
            f"{'more than once' if len(repeated) == 1 else 'several times'} "
            f"(pools: {', '.join(names)})"
        )


def pools_from_args(texts: Sequence[str]) -> tuple[PoolSpec, ...]:
    """The pools of repeated --pool options, in the order given."""
    pools = tuple(parse_pool_arg(t) for t in texts)
    check_unique(pools, "--pool")
    return pools


def _pool_from_json(entry: Any, index: int, path: Path) -> PoolSpec:
    where = f"pool file {path}: entry {index + 1}"
    if not isinstance(entry, dict):
        raise ConfigError(
            f"{where} is {_json_kind(entry)} ({json.dumps(entry)[:40]}); expected an object "
            'like {"name": "sram", "size": "64K"}'
        )
    unknown = sorted(set(entry) - set(POOL_KEYS))
    if unknown:
        raise ConfigError(
            f"{where} has unknown key(s) {', '.join(unknown)}; the keys are {', '.join(POOL_KEYS)}"
        )
    name = entry.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        found = "no name" if name is None else f"name {json.dumps(name)}"
        raise ConfigError(
            f"{where} has {found}; expected a name of letters, digits and '_' (e.g. \"sram\")"
        )
    where = f"pool file {path}: pool '{name}'"
    if "size" not in entry:
        raise ConfigError(
            f'{where} has no size; add "size": BYTES (e.g. 65536 or "64K"; null for no limit)'
        )
    raw = entry["size"]
    size: int | None
    if raw is None:
        size = None  # explicitly unbounded, like the host's default pool
    elif isinstance(raw, bool) or not isinstance(raw, int | str):
        raise ConfigError(f'{where} has size {json.dumps(raw)}; expected bytes or "16K"/"1M"')
    elif isinstance(raw, int):
        if raw < 0:
            raise ConfigError(f"{where} has size {raw}; expected >= 0 bytes")
        size = raw
    else:
        size = size_or_none(raw)
        if size is None:
            raise ConfigError(
                f'{where} has size "{raw}"; expected bytes or a number with K, M or G (e.g. "16K")'
            )
    targets: tuple[str, ...] = DEFAULT_TARGETS
    if "targets" in entry:
        raw_targets = entry["targets"]
        if not isinstance(raw_targets, list) or not all(isinstance(t, str) for t in raw_targets):
            raise ConfigError(
                f'{where} has targets {json.dumps(raw_targets)}; expected a list such as ["cpu"]'
            )
        targets = tuple(t.lower() for t in raw_targets)
        problem = _targets_problem(targets)
        if problem:
            raise ConfigError(f'{where} has {problem}; expected a list such as ["cpu"]')
    return PoolSpec(name.lower(), size, targets)


def read_pool_file(path: str | Path) -> tuple[PoolSpec, ...]:
    """The pools listed in a JSON file, fastest first (the --pool-file option)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"pool file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"pool file {path} cannot be read: {err}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"pool file {path} is not JSON ({err.msg} at line {err.lineno} column {err.colno}); "
            f"expected a list such as {POOL_FILE_EXAMPLE}"
        ) from None
    if not isinstance(document, list) or not document:
        found = "an empty list" if document == [] else _json_kind(document)
        raise ConfigError(
            f"pool file {path} holds {found}; expected a list of pools, fastest first, such "
            f"as {POOL_FILE_EXAMPLE}"
        )
    pools = tuple(_pool_from_json(entry, i, path) for i, entry in enumerate(document))
    check_unique(pools, f"pool file {path}")
    return pools


def with_reach(
    pools: Sequence[PoolSpec], reaches: Mapping[str, Sequence[str]]
) -> tuple[PoolSpec, ...]:
    """The pools with every accelerator target that reaches their memory added.

    ``reaches`` maps an accelerator's target to the board memories it reads and writes
    (the board's ``accelerators:``); a pool is named after its memory. The targets a pool
    already has (the CPU's by default, or ``--pool NAME:SIZE:TARGETS``) stay.
    """
    result = []
    for pool in pools:
        extra = [t for t, memories in reaches.items() if pool.name in memories]
        targets = tuple(dict.fromkeys([*pool.targets, *extra]))
        result.append(PoolSpec(pool.name, pool.size, targets))
    return tuple(result)


def targets_reaching(memory: str, reaches: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """What reaches a board memory: the CPU (it reaches every memory of its board) and
    each accelerator target whose memories include it."""
    return tuple(dict.fromkeys([*DEFAULT_TARGETS, *(t for t, m in reaches.items() if memory in m)]))
