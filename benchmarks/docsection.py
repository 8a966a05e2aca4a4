"""The generated blocks of ``docs/benchmarks.md``, shared by the benchmark scripts (stdlib only)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


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


def write_results(name: str, data: dict[str, Any], out: Path, lines: Callable[[dict[str, Any]], list[str]]) -> None:
    """A benchmark's figures: ``benchmarks/NAME-<UTC date>.json`` (its name also in ``data["json"]``) and the
    ``NAME`` section of ``out`` made of them."""
    file = f"{name}-{datetime.now(timezone.utc):%Y%m%d}.json"
    data["json"] = file
    (Path(__file__).resolve().parent / file).write_text(json.dumps(data, indent=1) + "\n")
    write_section(out, name, lines(data))
    print(f"written: benchmarks/{file}, {out}")
