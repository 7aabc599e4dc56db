"""What an Ethos-U build reports: which operators Vela put on the NPU and which on the CPU,
per NPU subgraph its bytes, and Vela's own summary. ``lines`` is the same as text, which
``aot build`` prints above aot's own pools."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aot.backends.ethos_u.vela import VelaResult, vela_version

# Vela's summary CSV columns worth a report line, with their unit.
SUMMARY_FIELDS = (
    ("sram_memory_used", "KiB"),
    ("off_chip_flash_memory_used", "KiB"),
    ("on_chip_flash_memory_used", "KiB"),
    ("dram_memory_used", "KiB"),
    ("cycles_npu", "cycles"),
    ("cycles_total", "cycles"),
    ("inference_time", "s"),
    ("nn_macs", "MACs"),
)


def vela_report(result: VelaResult, operators: Sequence[Any] = ()) -> dict[str, Any]:
    """A JSON-ready record. ``operators`` are the source model's operators
    (``SourceOperator``: index, type, output tensor); each is listed as NPU or CPU by
    whether Vela computes its output tensor."""
    cpu_outputs = {name for name, _ in result.cpu_operators}
    npu, cpu = [], []
    for op in operators:
        (cpu if op.output in cpu_outputs else npu).append(op.label)
    if not operators:
        cpu = [f"{kind} ({name})" for name, kind in result.cpu_operators]
    summary = {
        key: {"value": _number(result.summary[key]), "unit": unit}
        for key, unit in SUMMARY_FIELDS
        if key in result.summary
    }
    record: dict[str, Any] = {
        "accelerator": result.accelerator,
        "vela_version": vela_version(),
        "system_config": result.summary.get("system_config", ""),
        "memory_mode": result.summary.get("memory_mode", ""),
        "npu_operators": npu,
        "cpu_operators": cpu,
        "subgraphs": [
            {
                "index": sg.index,
                "command_stream_bytes": len(sg.command_stream),
                "read_only_bytes": len(sg.read_only),
                "arena_bytes": sg.scratch_bytes,
                "inputs": [fm.name for fm in sg.inputs],
                "outputs": [fm.name for fm in sg.outputs],
            }
            for sg in result.subgraphs
        ],
        "summary": summary,
    }
    record["lines"] = format_report(record)
    return record


def format_report(report: dict[str, Any]) -> list[str]:
    """Lines for a terminal: NPU and CPU operators, bytes per NPU subgraph, Vela's summary."""
    lines = [
        f"{report['accelerator']} (Vela {report['vela_version']}, {report['system_config']}, "
        f"{report['memory_mode']})",
        f"  NPU operators ({len(report['npu_operators'])}): "
        + (", ".join(report["npu_operators"]) or "none"),
        f"  CPU operators ({len(report['cpu_operators'])}): "
        + (", ".join(report["cpu_operators"]) or "none"),
    ]
    for sg in report["subgraphs"]:
        lines.append(
            f"  NPU subgraph {sg['index']}: {sg['command_stream_bytes']} B commands, "
            f"{sg['read_only_bytes']} B weights, {sg['arena_bytes']} B arena"
        )
    for key, entry in report["summary"].items():
        lines.append(f"  Vela {key.replace('_', ' ')}: {entry['value']} {entry['unit']}")
    return lines


def _number(text: str) -> float | int | str:
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() else round(value, 6)
