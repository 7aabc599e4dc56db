"""Benchmarks of aot on the MLPerf Tiny reference models; writes docs/benchmarks.{md,json}.

    python benchmarks/run.py                 all sections
    python benchmarks/run.py compile         one section
    python benchmarks/run.py qemu --model a.tflite --model b.tflite   other models
    python benchmarks/run.py qemu --board mps2_an386                  one board
    python benchmarks/run.py qemu --versus none                       aot without its peer

Sections (each a module benchmarks/bench_<name>.py with ``run() -> (title, rows)``):
  compile   compile time, constants, workspace and generated C lines per model
  memory    int8 constants and workspace next to the TFLite Micro arena
  planners  workspace per model and planning algorithm, ratio to the lower bound
  qemu      instructions per inference, memory, stack and section sizes on the emulated
            boards, aot against TensorFlow Lite Micro built here (reference, CMSIS-NN)
  zephyr    the same under Zephyr 3.4.99 (../shared/zephyr) against the cmsis template
  zephyr_profile  vww's per-operator shares on mps2_an385, cmsis against Zephyr
Results are deterministic except wall-clock times. Under QEMU, time is counted in
instructions (-icount), never cycles.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import platform
import re
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from aot.testing.shared import shared_dir

ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = shared_dir() / "models" / "mlperf_tiny"
MODELS = ["ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8"]
DOCS = ROOT / "docs"

Section = Callable[[], tuple[str, list[dict]]]


def compile_section() -> tuple[str, list[dict]]:
    from aot.compiler import CompileOptions, compile_model

    rows = []
    for model in MODELS:
        path = MODELS_DIR / f"{model}.tflite"
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            compiled = compile_model(path, Path(tmp), CompileOptions())
            seconds = time.perf_counter() - start
        meta = compiled.metadata
        rows.append(
            {
                "model": model,
                "frontend": meta["model"]["frontend"],
                "compile_s": round(seconds, 2),
                "tflite_bytes": path.stat().st_size,
                "constants_bytes": meta["constants"]["bytes"],
                "workspace_bytes": meta["memory"]["workspace_bytes"],
                "c_lines": meta["library"]["c_lines"],
                "kernels": len(meta["operators"]),
            }
        )
    return "Compile (host, default options)", rows


def _section(name: str) -> Section:
    def run(**options: object) -> tuple[str, list[dict]]:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        section = importlib.import_module(f"bench_{name}").run
        accepted = inspect.signature(section).parameters
        return section(**{k: v for k, v in options.items() if k in accepted})

    return run


SECTIONS: dict[str, Section] = {"compile": compile_section}
for _name in ("memory", "planners", "qemu", "zephyr", "zephyr_profile"):
    if (Path(__file__).resolve().parent / f"bench_{_name}.py").is_file():
        SECTIONS[_name] = _section(_name)


def markdown_table(rows: list[dict]) -> str:
    """Every column any row has, in first-seen order; a row without one leaves it blank."""
    if not rows:
        return "(no rows)\n"
    headers = list(dict.fromkeys(h for row in rows for h in row))
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(h, "")) for h in headers) + " |")
    return "\n".join(lines) + "\n"


def board_order(rows: list[dict]) -> list[dict]:
    """QEMU rows by model (MODELS order, then others), then board name; 'does not fit' last."""

    def key(row: dict) -> tuple:
        model = row["model"]
        rank = MODELS.index(model) if model in MODELS else len(MODELS)
        return (model == "does not fit", rank, model, row["board"])

    return sorted(rows, key=key)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "sections", nargs="*", metavar="SECTION", help="sections to run (default: all)"
    )
    parser.add_argument(
        "--model",
        action="append",
        type=Path,
        metavar="FILE",
        help="a .tflite file instead of the MLPerf Tiny models (repeatable; qemu section); "
        "the documents are written only for the MLPerf Tiny models",
    )
    parser.add_argument(
        "--board",
        action="append",
        metavar="NAME",
        help="only this emulated board (repeatable; qemu section): its rows replace the "
        "board's rows in the documents, the other boards' stay",
    )
    parser.add_argument(
        "--versus",
        choices=("tflm", "none"),
        default="tflm",
        help="the peer of the qemu section: TensorFlow Lite Micro built here (default), or none",
    )
    args = parser.parse_args(argv)
    chosen = args.sections or list(SECTIONS)
    unknown = [name for name in chosen if name not in SECTIONS]
    if unknown:
        parser.error(f"unknown section {', '.join(unknown)}; sections: {', '.join(SECTIONS)}")
    options = {"models": args.model, "boards": args.board, "versus": args.versus}
    if args.model:
        for name in chosen:
            print(f"benchmark: {name}", file=sys.stderr, flush=True)
            print(markdown_table(SECTIONS[name](**options)[1]))
        return 0
    json_path = DOCS / "benchmarks.json"
    results = json.loads(json_path.read_text()) if json_path.is_file() else {}
    for name in chosen:
        print(f"benchmark: {name}", file=sys.stderr, flush=True)
        title, rows = SECTIONS[name](**options)
        print(markdown_table(rows))
        if name == "qemu" and args.board:
            retired = importlib.import_module("bench_qemu").RETIRED_COLUMNS
            before = [
                {k: v for k, v in row.items() if k not in retired}
                for row in results.get(name, {}).get("rows", [])
                if row["board"] not in args.board
            ]
            rows = board_order(before + rows)
        results[name] = {"title": title, "rows": rows}
        if name == "qemu":
            update_readme(rows)
    results["_machine"] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": __import__("os").cpu_count(),
    }
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    parts = [
        "# Benchmarks",
        "",
        "Generated by `python benchmarks/run.py`; raw numbers in `docs/benchmarks.json`.",
        f"Machine: {results['_machine']}.",
        "",
    ]
    for name in SECTIONS:
        if name in results:
            parts += [f"## {results[name]['title']}", "", markdown_table(results[name]["rows"])]
    page = DOCS / "benchmarks.md"
    kept = kept_blocks(page.read_text()) if page.is_file() else []
    page.write_text("\n".join(parts + kept))
    return 0


README = ROOT / "README.md"
README_BLOCK = re.compile(
    r"(<!-- qemu-ratio: generated by benchmarks/run.py qemu -->\n).*?(<!-- qemu-ratio: end -->)",
    re.S,
)


def update_readme(rows: list[dict]) -> None:
    """The README's sentence on aot against TFLite Micro, from the measured rows."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sentence = importlib.import_module("bench_qemu").speed_sentence(rows)
    text = README.read_text()
    if sentence is None or not README_BLOCK.search(text):
        return
    wrapped = textwrap.fill(sentence, width=90, break_on_hyphens=False)
    README.write_text(README_BLOCK.sub(lambda m: m.group(1) + wrapped + "\n" + m.group(2), text))


BLOCK = re.compile(
    r"^<!-- (\w+): (?:generated by|written by hand).*?^<!-- \1: end -->\n", re.M | re.S
)


def kept_blocks(page: str) -> list[str]:
    """Sections other scripts own (``<!-- name: generated by ... -->`` up to
    ``<!-- name: end -->``, e.g. benchmarks/bench_operators.py) and notes written by hand
    (``<!-- name: written by hand ... -->``): kept as they are."""
    return [match.group(0) for match in BLOCK.finditer(page)]


if __name__ == "__main__":
    raise SystemExit(main())
