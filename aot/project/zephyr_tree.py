"""A Zephyr tree to build zephyr-template projects with: its version and the board names of
that version (the build itself is the build stage's: aot/building/zephyr.py).

Zephyr renamed its boards twice: hardware model v2 (Zephyr 3.7) turned ``mps2_an385`` into
``mps2/an385``, and 4.0 moved Corstone-300 boards under ``mps3/corstone300/``. A board's
YAML lists its names per version (``zephyr.names``); the tree's ``VERSION`` file picks
one. A board the version lacks is refused before the model is compiled.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from aot.boards import Board
from aot.errors import ConfigError

# The oldest Zephyr the template works with: EXTRA_CONF_FILE and EXTRA_DTC_OVERLAY_FILE,
# which CMakeLists.txt appends to, appeared in 3.4. The newest whose board names aot's
# board data was checked against; a newer tree gets the newest names aot knows.
MIN_VERSION = (3, 4)
NEWEST_CHECKED = (4, 2)
BUILD_LOG = "aot_build.log"  # under the project's build folder
BUILD_TIMEOUT_S = 1800.0


@dataclass(frozen=True, order=True)
class ZephyrVersion:
    major: int
    minor: int
    patch: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @classmethod
    def parse(cls, text: str) -> ZephyrVersion:
        """``'3.7'`` or ``'3.4.99'``."""
        parts = text.strip().split(".")
        if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
            raise ConfigError(f"'{text}' is not a Zephyr version (MAJOR.MINOR[.PATCH])")
        return cls(*(int(p) for p in parts))


@dataclass(frozen=True)
class ZephyrTree:
    base: Path  # ZEPHYR_BASE: the zephyr repository
    version: ZephyrVersion

    @property
    def workspace(self) -> Path | None:
        """The west workspace holding the tree (the folder with ``.west``), if any."""
        for folder in (self.base, *self.base.parents):
            if (folder / ".west").is_dir():
                return folder
        return None

    def modules(self) -> list[Path]:
        """The Zephyr modules beside the tree (``<workspace>/modules/**/zephyr/module.yml``),
        given to CMake as ZEPHYR_MODULES: west's own module list needs ``west update``."""
        root = (self.workspace or self.base.parent) / "modules"
        if not root.is_dir():
            return []
        return sorted(p.parent.parent for p in root.glob("**/zephyr/module.yml"))


@dataclass(frozen=True)
class ZephyrTarget:
    """What building one board's project with a tree takes, found once, before the model
    is compiled: the tree, the board's name in the tree's version and the Zephyr modules
    beside it (given to CMake as ZEPHYR_MODULES)."""

    tree: ZephyrTree
    board: str
    modules: tuple[Path, ...]

    @classmethod
    def of(cls, tree: ZephyrTree, board: Board) -> ZephyrTarget:
        """``board`` in ``tree``; a one-line error when the tree's version lacks it."""
        return cls(tree, board_name(board, tree.version), tuple(tree.modules()))


def read_version(base: Path) -> ZephyrVersion:
    """The version in ``ZEPHYR_BASE/VERSION`` (``VERSION_MAJOR = 3`` ... lines)."""
    path = base / "VERSION"
    try:
        text = path.read_text()
    except OSError:
        raise ConfigError(
            f"{base} is not a Zephyr tree (no VERSION file); point --zephyr-base or "
            "ZEPHYR_BASE at the zephyr folder of a workspace"
        ) from None
    fields = dict(re.findall(r"^\s*(\w+)\s*=\s*(\d*)\s*$", text, re.MULTILINE))
    try:
        return ZephyrVersion(
            int(fields["VERSION_MAJOR"]),
            int(fields["VERSION_MINOR"]),
            int(fields.get("PATCHLEVEL") or 0),
        )
    except (KeyError, ValueError):
        raise ConfigError(f"{path} names no VERSION_MAJOR and VERSION_MINOR") from None


def find_tree(option: str | None) -> ZephyrTree | None:
    """The tree given with --zephyr-base, else $ZEPHYR_BASE; None when neither is set."""
    given = option or os.environ.get("ZEPHYR_BASE")
    if not given:
        return None
    base = Path(given).expanduser().resolve()
    version = read_version(base)
    if (version.major, version.minor) < MIN_VERSION:
        raise ConfigError(
            f"Zephyr {version} at {base} is older than aot's zephyr template supports "
            f"({MIN_VERSION[0]}.{MIN_VERSION[1]} on); use a newer tree"
        )
    return ZephyrTree(base, version)


def board_name(board: Board, version: ZephyrVersion | None) -> str:
    """The board's name in Zephyr ``version`` (None: the newest name aot knows); a
    one-line error when that version has no such board."""
    if board.zephyr_board is None:
        raise ConfigError(f"board '{board.name}' has no Zephyr board name")
    if version is None or not board.zephyr_names:
        return board.zephyr_board
    named = [(ZephyrVersion.parse(since), name) for since, name in board.zephyr_names]
    chosen = [name for since, name in sorted(named) if since <= version]
    if not chosen:
        first = min(named)[0]
        names = ", ".join(
            f"{name} from {since.major}.{since.minor}" for since, name in sorted(named)
        )
        raise ConfigError(
            f"board '{board.name}' is not in Zephyr {version}: it needs Zephyr "
            f"{first.major}.{first.minor} or newer ({names}); use a newer tree "
            "(--zephyr-base) or the cmsis template"
        )
    return chosen[-1]


def tree_for_build(template: str, option: str | None, board: Board) -> ZephyrTarget | None:
    """For ``aot build``: the Zephyr tree to build a zephyr-template project with and the
    board in it (None for another template, or when no tree is given: the project is only
    generated), found before the model is compiled."""
    if template != "zephyr":
        if option:
            raise ConfigError("--zephyr-base is for --template zephyr")
        return None
    tree = find_tree(option)
    return ZephyrTarget.of(tree, board) if tree is not None else None
