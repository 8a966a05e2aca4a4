"""A ShareGPT file indexed on disk: entries are parsed when read, so a 1 GB file costs megabytes.

Stage: dataset (imported by ``locustfiles.dataset``). Allowed imports: the standard library only
(it runs inside Locust workers).

``ShareGPTFile.from_path`` streams the file once in blocks, decodes one entry at a time with
``json.JSONDecoder.raw_decode``, validates it and keeps only its byte offset and length; peak
memory is a few blocks plus the largest entry plus 16 bytes per entry, whatever the file's size.
``file[i]`` then seeks, reads and parses entry ``i``. Errors keep ``json.load``'s wording
(message, line, column) and add the byte offset. A file that ends inside its array (an interrupted
download) is told apart from a malformed one: ``TruncatedError`` says how many complete entries it
holds, and ``allow_truncated`` indexes just those.
"""

from __future__ import annotations

import json
import os
import re
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, overload

BLOCK_SIZE = 1 << 20  # bytes read per step of the index pass
_BOM = b"\xef\xbb\xbf"
_WS = re.compile(r"[ \t\n\r]*")  # JSON whitespace, all ASCII (one byte a character)
_DECODER = json.JSONDecoder()
# A decode error this close to the window's end (or an unterminated string) may only mean the
# window cut the value short: read more and decode again before calling it a mistake.
_CUT_MARGIN = 32
# What a value cut by the end of the file leaves where the decoder stops: a literal's or number's
# start (``tr``, ``-``, ``1.`` leaves ``.``, ``1e+`` leaves ``e+``), or a ``\uXXXX`` escape's.
_CUT_TAILS = frozenset({"t", "tr", "tru", "f", "fa", "fal", "fals", "n", "nu", "nul", "-", ".",
                        "e", "E", "e+", "e-", "E+", "E-"})
_CUT_ESCAPE = re.compile(r"u[0-9a-fA-F]{0,4}")  # 4: a high surrogate before its pair
ALLOW_HINT = "pass --allow-truncated to use them"


class DataFileError(ValueError):
    """A dataset or prompt line is missing or malformed, or no prompt survived sampling."""


@dataclass(frozen=True)
class Truncation:
    """Where a file cut short ends: ``complete`` whole entries precede the cut at byte ``size``."""

    complete: int
    size: int
    inside: bool
    """The cut falls inside an entry (else between entries, or right after the ``[``)."""

    def message(self, name: str, hint: str = ALLOW_HINT) -> str:
        """One line: where the file ends, that it looks truncated, and how to go on."""
        where = (f"inside entry {self.complete:,}" if self.inside else
                 f"after entry {self.complete - 1:,}" if self.complete else "right after its opening '['")
        use = (f"{self.complete:,} complete conversation{'s' if self.complete != 1 else ''} before it; {hint}"
               if self.complete else "no complete conversation before it")
        return (f"{name}: the file ends {where} (byte {self.size:,}): it looks truncated "
                f"(an interrupted download?); {use}")


class TruncatedError(DataFileError):
    """The file ends inside its JSON array: cut short rather than malformed (``truncation`` says where)."""

    def __init__(self, name: str, truncation: Truncation, hint: str = ALLOW_HINT) -> None:
        super().__init__(truncation.message(name, hint))
        self.name, self.truncation = name, truncation


class _Cut(Exception):
    """A decode error at the end of the file that only a cut can explain (``error`` says it as JSON)."""

    def __init__(self, error: DataFileError) -> None:
        super().__init__(str(error))
        self.error = error


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return f"expected an object with 'id' and 'conversations', got {_kind(entry)}"
    if not isinstance(entry.get("id"), str):
        return f"'id' must be a string, got {_kind(entry.get('id'))}"
    turns = entry.get("conversations")
    if not isinstance(turns, list):
        return f"'conversations' must be an array, got {_kind(turns)}"
    for j, turn in enumerate(turns):
        if not (isinstance(turn, dict) and isinstance(turn.get("from"), str)
                and isinstance(turn.get("value"), str)):
            return f"conversations[{j}] must be an object with string 'from' and 'value'"
    return None


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


class _Window:
    """The decoded text around the read position, with that position's byte offset and line."""

    def __init__(self, f: BinaryIO, name: str, block_size: int) -> None:
        self.f, self.name, self.block_size = f, name, block_size
        head = f.read(len(_BOM))
        self.carry = b"" if head == _BOM else head  # undecoded bytes (a cut UTF-8 character)
        self.read_to = len(head)  # file offset of the next byte to read
        self.byte = len(head) - len(self.carry)  # file offset of buf[pos]
        self.buf, self.pos, self.eof = "", 0, False
        self.cut_char: int | None = None  # file offset of a character cut by the end of the file
        self.line, self.col = 1, 1  # of buf[0], as json counts them (BOM excluded)

    def fill(self, at_least: int = 0) -> bool:
        """Drop the text before ``pos`` and append the next block; False at the end of the file."""
        if self.eof:
            return False
        buf, pos, self.buf = self.buf, self.pos, ""  # hold one copy of the text, not two
        if pos:
            newlines = buf.count("\n", 0, pos)
            self.line += newlines
            self.col = pos - buf.rfind("\n", 0, pos) if newlines else self.col + pos
            buf, self.pos = buf[pos:], 0
        raw = self.f.read(max(self.block_size, at_least))
        data_at, data = self.read_to - len(self.carry), self.carry + raw
        self.read_to += len(raw)
        self.eof = not raw
        try:
            text, self.carry = data.decode("utf-8"), b""
        except UnicodeDecodeError as exc:
            if exc.reason == "unexpected end of data":  # a character cut by the block (or the file)
                text, self.carry = data[:exc.start].decode("utf-8"), data[exc.start:]
                if not raw:  # the file ends inside a character: a cut, unless nothing needs it
                    self.cut_char, self.carry = data_at + exc.start, b""
            else:
                raise DataFileError(f"{self.name}: not UTF-8 (byte 0x{data[exc.start]:02x} at "
                                   f"byte offset {data_at + exc.start})") from None
        del raw, data
        self.buf = buf + text
        return bool(text) or not self.eof

    def advance(self, to: int) -> None:
        self.byte += _utf8_len(self.buf[self.pos:to])
        self.pos = to

    def peek(self) -> str:
        """Skip whitespace; the next character, or "" at the end of the file."""
        while True:
            self.advance(_WS.match(self.buf, self.pos).end())  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return ""

    def value(self) -> tuple[Any, int, int]:
        """Decode the JSON value at ``pos``: (value, byte offset, byte length)."""
        while True:
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                cut = exc.msg.startswith("Unterminated string") or \
                    exc.pos >= len(self.buf) - _CUT_MARGIN
                if cut and not self.eof:
                    self.fill(len(self.buf) - self.pos)  # grows geometrically; decode again
                    continue
                error = self.syntax_error(exc.msg, exc.pos)
                rest = self.buf[exc.pos:].rstrip(" \t\n\r")
                if exc.msg.startswith("Unterminated string") or not rest or rest in _CUT_TAILS or (
                        exc.msg.startswith("Invalid \\uXXXX") and _CUT_ESCAPE.fullmatch(rest)):
                    raise _Cut(error) from None  # the end of the file stopped the decoder
                raise error from None
            if end == len(self.buf) and not self.eof:  # a number may go on in the next block
                self.fill(len(self.buf) - self.pos)
                continue
            start = self.byte
            self.advance(end)
            return obj, start, self.byte - start

    def syntax_error(self, msg: str, at: int) -> DataFileError:
        """``json.load``'s message, line and column, plus the byte offset (one "at", not two)."""
        msg = msg.removesuffix(" at")  # "Unterminated string starting at" + " at line ..."
        newlines = self.buf.count("\n", 0, at)
        line = self.line + newlines
        col = at - self.buf.rfind("\n", 0, at) if newlines else self.col + at
        offset = self.byte + _utf8_len(self.buf[self.pos:at])
        return DataFileError(f"{self.name}: not valid JSON: {msg} at line {line} column {col} "
                            f"(byte offset {offset})")


def _index(f: BinaryIO, name: str, block_size: int
           ) -> tuple[array[int], array[int], Truncation | None]:
    offsets, lengths = array("q"), array("q")
    w = _Window(f, name, block_size)
    first = w.peek()
    if first != "[":
        if first in ('{', '"'):  # say what it is without reading all of it
            raise DataFileError(f"{name}: expected a JSON array of conversations, got "
                               f"{_kind({} if first == '{' else '')}")
        try:
            top, _, _ = w.value()  # a short scalar, or a JSON error
        except _Cut as cut:  # no array was begun: nothing to call truncated
            raise cut.error from None
        raise DataFileError(f"{name}: expected a JSON array of conversations, got {_kind(top)}")
    w.advance(w.pos + 1)
    if w.peek() != "]":
        while True:
            if not w.peek():  # the file ends after '[', after a comma or after a whole entry
                return offsets, lengths, Truncation(len(offsets), w.read_to, False)
            try:
                entry, offset, length = w.value()  # "]" after a comma is an error here
            except _Cut:
                return offsets, lengths, Truncation(len(offsets), w.read_to, True)
            problem = _entry_problem(entry)
            if problem is not None:
                raise DataFileError(f"{name}: entry {len(offsets)}: {problem}")
            offsets.append(offset)
            lengths.append(length)
            nxt = w.peek()
            if nxt == "]":
                break
            if nxt not in ("", ","):
                raise w.syntax_error("Expecting ',' delimiter", w.pos)
            w.advance(w.pos + len(nxt))
    w.advance(w.pos + 1)
    if w.peek():
        raise w.syntax_error("Extra data", w.pos)
    if w.cut_char is not None:  # a character cut where nothing else was missing
        raise DataFileError(f"{name}: not UTF-8 (a character cut by the end of the file at byte "
                           f"offset {w.cut_char})")
    return offsets, lengths, None


class ShareGPTFile(Sequence[dict[str, Any]]):
    """The validated entries of a ShareGPT file, read from disk on access (read-only).

    Each access parses a fresh dict, so callers cannot spoil it for others. If the file's mtime or
    size changed since it was indexed, access raises ``DataFileError`` instead of reading
    whatever now lies at the old offsets. ``truncation`` is set when the file was cut short and
    only its complete entries were indexed (``allow_truncated``).
    """

    def __init__(self, path: Path, name: str, stamp: tuple[int, int], offsets: array[int],
                 lengths: array[int], truncation: Truncation | None = None) -> None:
        self.path, self.name, self.stamp = path, name, stamp
        self._offsets, self._lengths = offsets, lengths
        self.truncation = truncation

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], *, block_size: int = BLOCK_SIZE,
                  allow_truncated: bool = False) -> ShareGPTFile:
        """Stream and validate ``path`` once; raises ``DataFileError`` naming it and the problem.

        A file cut short inside its array raises ``TruncatedError``, or with ``allow_truncated``
        gives its complete entries (``truncation`` set).
        """
        name = str(path)
        try:
            with open(path, "rb") as f:
                before = os.fstat(f.fileno())
                offsets, lengths, truncation = _index(f, name, block_size)
            after = os.stat(path)
        except OSError as exc:
            raise DataFileError(f"{name}: cannot read dataset file ({exc.strerror})") from None
        stamp = (before.st_mtime_ns, before.st_size)
        if (after.st_mtime_ns, after.st_size) != stamp:
            raise DataFileError(f"{name}: dataset file changed while it was being read; try again")
        if truncation is not None and not allow_truncated:
            raise TruncatedError(name, truncation)
        return cls(Path(path).resolve(), name, stamp, offsets, lengths, truncation)

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"entry {i} out of range ({len(self)} entries)")
        try:
            with open(self.path, "rb") as f:
                return self._read(f, i)
        except OSError as exc:
            raise DataFileError(f"{self.name}: cannot read dataset file ({exc.strerror})") from None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            with open(self.path, "rb") as f:
                for i in range(len(self)):
                    yield self._read(f, i)
        except OSError as exc:
            raise DataFileError(f"{self.name}: cannot read dataset file ({exc.strerror})") from None

    def _read(self, f: BinaryIO, i: int) -> dict[str, Any]:
        st = os.stat(self.path)
        if (st.st_mtime_ns, st.st_size) == self.stamp:
            f.seek(self._offsets[i])
            raw = f.read(self._lengths[i])
            try:
                entry = json.loads(raw.decode("utf-8"))
            except ValueError:  # JSONDecodeError and UnicodeDecodeError: rewritten in place
                pass
            else:
                if isinstance(entry, dict):
                    return entry
            st = os.stat(self.path)
        raise DataFileError(f"{self.name}: dataset file changed on disk after it was indexed "
                           f"({self.stamp[1]} -> {st.st_size} bytes, mtime "
                           f"{self.stamp[0]} -> {st.st_mtime_ns} ns); load it again")

    def __eq__(self, other: object) -> bool:
        """Equal to a list with equal entries (a drop-in for the list ``json.load`` gave)."""
        if isinstance(other, ShareGPTFile):
            return self is other or (len(self) == len(other) and all(map(dict.__eq__, self, other)))
        if isinstance(other, list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        cut = ", truncated" if self.truncation else ""
        return f"ShareGPTFile({self.name!r}, {len(self)} entries{cut})"
