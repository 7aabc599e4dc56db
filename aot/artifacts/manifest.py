"""The library manifest: a build folder's ``metadata.json`` as typed, frozen data.

``aot build`` writes it (``write_manifest``) and every later command reads it
(``read_manifest``): run, bench, validate, inspect, flash, the farm. Its JSON is the
versioned format of ``metadata.json`` (``SCHEMA_VERSION``); the fields of each record are
its keys in the order they are written, so ``to_json`` writes what aot always wrote,
byte for byte. Nothing outside this package reads the document by key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from aot.artifacts.project import BuildManifest, ProjectManifest
from aot.artifacts.record import Record
from aot.artifacts.schedule import ScheduleInfo
from aot.errors import ConfigError, ModelError

METADATA_FILE = "metadata.json"
SCHEMA_VERSION = 1
# Who wrote a folder: --force replaces only folders whose metadata.json says this.
GENERATOR = "aot build"


@dataclass(frozen=True, kw_only=True)
class SourceOperatorRef(Record):
    """An operator of the source model: its index in the file, its type and (where the
    manifest names it) its output tensor."""

    OMITTED: ClassVar[frozenset[str]] = frozenset({"output"})

    index: int
    type: str
    output: str | None = None

    @property
    def label(self) -> str:
        return f"{self.type} #{self.index}"


@dataclass(frozen=True, kw_only=True)
class ModelInfo(Record):
    name: str
    source: str = ""  # the model file, as an absolute path
    source_sha256: str = ""
    format: str = ""  # "tflite" or "onnx"
    frontend: str = ""
    source_operators: tuple[SourceOperatorRef, ...] = ()


@dataclass(frozen=True, kw_only=True)
class BackendEntry(Record):
    """A backend of the build, in priority order (the CPU last), with what it took."""

    OMITTED: ClassVar[frozenset[str]] = frozenset({"report", "emulator_note"})

    name: str
    target: str
    steps: int = 0
    source_operators: int = 0
    # What the backend's own compiler said (e.g. Vela's summary; its "lines" are shown).
    report: Mapping[str, Any] | None = None
    emulator_note: str | None = None  # why the emulator cannot run its steps

    @property
    def report_lines(self) -> tuple[str, ...]:
        return tuple((self.report or {}).get("lines", ()))


@dataclass(frozen=True, kw_only=True)
class Quantization(Record):
    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None


@dataclass(frozen=True, kw_only=True)
class IOTensor(Record):
    """A model input or output as the caller sees it, and its C name."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # numpy dtype name
    size_bytes: int = 0
    quantization: Quantization | None = None
    c_name: str = ""


@dataclass(frozen=True, kw_only=True)
class KernelsInfo(Record):
    choice: str = "auto"  # --kernels
    isas: tuple[str, ...] = ()  # the hand-written kernels' instruction sets, best first


@dataclass(frozen=True, kw_only=True)
class OperatorEntry(Record):
    """One step of the executor, with where it runs."""

    index: int
    name: str
    label: str | None = None  # in the source model's words, e.g. "CONV_2D #3"
    source_operators: tuple[SourceOperatorRef, ...] = ()
    kernel: str = ""
    implementation: str | None = None  # the hand-written C kernel's function, or "tvm"
    backend: str = "cpu"
    target: str = "cpu"
    scratch_bytes: int = 0
    macs: int = 0
    workspace_bytes: int = 0

    @property
    def shown(self) -> str:
        """How reports name the step: its label, else its kernel's name."""
        return self.label or self.name


@dataclass(frozen=True, kw_only=True)
class PoolEntry(Record):
    OMITTED: ClassVar[frozenset[str]] = frozenset({"kind"})

    name: str
    size_limit: int | None = None  # None: unbounded
    targets: tuple[str, ...] = ("cpu",)  # what reaches it
    used_bytes: int = 0
    kind: str | None = None  # "persistent": operator state kept between inferences

    @property
    def persistent(self) -> bool:
        return self.kind == "persistent"


@dataclass(frozen=True, kw_only=True)
class StateEntry(Record):
    name: str
    shape: tuple[int, ...]
    dtype: str
    size_bytes: int
    initial: str  # "zeros" or "constant"
    buffer: str


@dataclass(frozen=True, kw_only=True)
class TouchedBy(Record):
    step: int
    target: str
    label: str | None = None


@dataclass(frozen=True, kw_only=True)
class BufferEntry(Record):
    """A planned buffer: where it is, what it holds, when it lives and who touches it."""

    OMITTED: ClassVar[frozenset[str]] = frozenset({"copy_of"})

    buffer: str
    pool: str
    offset: int
    tensor: str | None = None  # the source model's tensor it holds
    source_operator: SourceOperatorRef | None = None  # the operator that writes it
    copy_of: str | None = None  # a copy step's staging buffer: the buffer it copies
    size: int
    start: int
    end: int
    targets: tuple[str, ...] = ("cpu",)
    touched_by: tuple[TouchedBy, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ScheduleItem(Record):
    """One position of the run order of a build with copies: a step or a copy."""

    OMITTED: ClassVar[frozenset[str]] = frozenset({"step", "copy"})

    step: int | None = None
    copy: str | None = None


@dataclass(frozen=True, kw_only=True)
class CopyEntry(Record):
    name: str
    src: str
    dst: str
    size: int
    before_step: int


@dataclass(frozen=True, kw_only=True)
class MemoryInfo(Record):
    planner: str = "?"
    io_in_pool: bool = False
    pools: tuple[PoolEntry, ...] = ()
    workspace_bytes: int = 0
    persistent_bytes: int = 0
    states: tuple[StateEntry, ...] = ()
    lower_bound_bytes: int | None = None
    pool_lower_bounds: Mapping[str, int] = field(default_factory=dict)
    activation_lower_bound_bytes: int | None = None
    allow_copies: bool = False
    constants_targets: tuple[str, ...] | None = None
    io_targets: tuple[str, ...] | None = None
    buffers: tuple[BufferEntry, ...] = ()
    # With copies: the run order, copies included, that buffer lifetimes count in.
    schedule: tuple[ScheduleItem, ...] | None = None
    copies: tuple[CopyEntry, ...] = ()

    def pool(self, name: str) -> PoolEntry | None:
        return next((p for p in self.pools if p.name == name), None)


@dataclass(frozen=True, kw_only=True)
class ActivationEntry(Record):
    id: int
    shape: tuple[int, ...]
    dtype: str
    size_bytes: int


@dataclass(frozen=True, kw_only=True)
class ConstantsInfo(Record):
    bytes: int = 0
    section_bytes: int | None = None  # with each array's alignment: what the section takes
    count: int = 0
    section: str = ""
    alignment: int = 16
    memory: str | None = None  # the board memory the build put them in

    @property
    def placed_bytes(self) -> int:
        return self.bytes if self.section_bytes is None else self.section_bytes


@dataclass(frozen=True, kw_only=True)
class LibraryInfo(Record):
    """The model library folder: its sources, interface and C symbols."""

    OMITTED: ClassVar[frozenset[str]] = frozenset({"defines"})

    dir: str = "model"
    include_dirs: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    c_lines: int = 0
    header: str = ""  # the interface, relative to the build folder
    run_function: str = ""
    descriptor: str = ""  # the model's struct aot_model_desc
    profile: bool = False  # per-step ticks (aot build --profile)
    defines: Mapping[str, str] = field(default_factory=dict)  # the backends' -D macros

    @property
    def header_name(self) -> str:
        """The interface's file name, as firmware includes it (``aot_<name>.h``)."""
        return PurePosixPath(self.header).name


@dataclass(frozen=True, kw_only=True)
class TraceOutput(Record):
    tensor: str | None
    dtype: str
    shape: tuple[int, ...]
    bytes: int


@dataclass(frozen=True, kw_only=True)
class TraceStep(Record):
    step: int
    outputs: tuple[TraceOutput, ...]


@dataclass(frozen=True, kw_only=True)
class TraceInfo(Record):
    """What each step writes, in the order TRACE returns it (aot build --trace)."""

    steps: tuple[TraceStep, ...]


@dataclass(frozen=True, kw_only=True)
class LibraryManifest(Record):
    """``metadata.json``: what ``aot build`` made (see the module's docstring)."""

    OMITTED: ClassVar[frozenset[str]] = frozenset(
        {"trace", "schedule", "board_file", "project", "build"}
    )

    schema_version: int = SCHEMA_VERSION
    generator: str = GENERATOR
    tool_versions: Mapping[str, str] = field(default_factory=dict)
    model: ModelInfo
    backends: tuple[BackendEntry, ...] = ()
    inputs: tuple[IOTensor, ...] = ()
    outputs: tuple[IOTensor, ...] = ()
    kernels: KernelsInfo = field(default_factory=KernelsInfo)
    operators: tuple[OperatorEntry, ...] = ()
    memory: MemoryInfo
    activations: tuple[ActivationEntry, ...] = ()
    constants: ConstantsInfo = field(default_factory=ConstantsInfo)
    library: LibraryInfo = field(default_factory=LibraryInfo)
    trace: TraceInfo | None = None
    schedule: ScheduleInfo | None = None  # patch stages (aot build --ram-budget/--frontier)
    compile_seconds: Mapping[str, float] = field(default_factory=dict)
    # Set by aot build after the compile: the board, and the YAML of --board PATH.
    board: str = ""
    board_file: str | None = None
    project: ProjectManifest | None = None
    build: BuildManifest | None = None

    @property
    def name(self) -> str:
        """The model name, the prefix of every C symbol (``aot_<name>_run``)."""
        return self.model.name

    @property
    def tensors(self) -> tuple[IOTensor, ...]:
        """The inputs, then the outputs."""
        return (*self.inputs, *self.outputs)

    @property
    def executable(self) -> str | None:
        """The built firmware or program, relative to the folder (None: not built)."""
        return self.build.executable if self.build is not None else None

    @property
    def sections(self) -> Mapping[str, int]:
        return self.build.sections if self.build is not None else {}

    @property
    def template(self) -> str | None:
        return self.project.template if self.project is not None else None

    def text(self) -> str:
        """The file's text: indented JSON and a final newline."""
        return json.dumps(self.to_json(), indent=2) + "\n"


def read_document(folder: str | Path) -> dict[str, Any]:
    """A build folder's metadata.json as JSON data, its schema version checked."""
    path = Path(folder) / METADATA_FILE
    if not path.is_file():
        raise ConfigError(
            f"{folder} is not an aot build folder (no {METADATA_FILE}); create one with "
            "'aot build MODEL -o DIR'"
        )
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ModelError(f"{path} is corrupt: {err}") from err
    version = document.get("schema_version") if isinstance(document, dict) else None
    if version != SCHEMA_VERSION:
        raise ConfigError(
            f"{path} has metadata schema version {version}; this aot reads version "
            f"{SCHEMA_VERSION}: rebuild the folder with this version of aot"
        )
    return document


def read_manifest(folder: str | Path) -> LibraryManifest:
    """The manifest of a build folder (ConfigError when ``folder`` is not one)."""
    return LibraryManifest.from_json(read_document(folder), str(Path(folder) / METADATA_FILE))


def write_manifest(folder: Path, manifest: LibraryManifest) -> None:
    (folder / METADATA_FILE).write_text(manifest.text())


def written_by_aot_build(folder: Path) -> bool:
    """Whether ``folder`` holds a metadata.json that ``aot build`` wrote."""
    try:
        document = json.loads((folder / METADATA_FILE).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(document, dict) and document.get("generator") == GENERATOR
