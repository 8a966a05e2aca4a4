"""The generated blocks of ``docs/benchmarks.md``, shared by the benchmark scripts (stdlib only)."""

from __future__ import annotations

from pathlib import Path


def write_section(path: Path, name: str, lines: list[str]) -> None:
    """Replace the text between ``<!-- begin NAME -->`` and ``<!-- end NAME -->`` (appended when
    absent), so the hand-written analysis around a generated table survives a re-run."""
    begin, end = f"<!-- begin {name} (generated) -->", f"<!-- end {name} -->"
    text = path.read_text() if path.exists() else ""
    block = "\n".join([begin, *lines, end])
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
