"""The Markdown table every benchmark section prints (the bottom of benchmarks/: it imports
none of the sections, which all import it)."""

from __future__ import annotations


def markdown_table(rows: list[dict]) -> str:
    """Every column any row has, in first-seen order; a row without one leaves it blank."""
    if not rows:
        return "(no rows)\n"
    widest = max(rows, key=len)  # the newest rows have every column, in their order
    headers = list(dict.fromkeys([*widest, *(h for row in rows for h in row)]))
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(h, "")) for h in headers) + " |")
    return "\n".join(lines) + "\n"
