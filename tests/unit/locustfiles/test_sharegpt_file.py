"""Unit tests for locustfiles.sharegpt_file: the streamed index pass and reads from disk.

Tiny block sizes put block boundaries everywhere: inside multi-byte characters, strings, escapes
and numbers; every result is checked against ``json.load`` of the same bytes.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import tracemalloc
from pathlib import Path

import pytest

from locustfiles.dataset import DataFileError, SamplingConfig, estimate_tokens, load_sharegpt, sample_prompts
from locustfiles.sharegpt_file import ShareGPTFile, TruncatedError, Truncation, _Window
from orchestrate.standins.sharegpt_synth import generate_sharegpt
from tests.helpers import write_file as write

TINY_BLOCKS = (1, 2, 3, 4, 5, 7, 13, 64)
TRICKY = ["é", "€ and 😀", 'quote " and \\ backslash', "brackets ] } [ { , :",
          "\\u00e9 \\ud83d", "tab\there\nnewline", "", "x" * 300]


def tricky_entries() -> list[dict]:
    return [{"id": f"c{i}-{text[:3]}",
             "conversations": [{"from": "human", "value": text},
                               {"from": "gpt", "value": text[::-1]}],
             "n": [1.5e3, -0, 12345678901234567890, None, True]}
            for i, text in enumerate(TRICKY)]


@pytest.fixture(autouse=True)
def _fresh_cache(fresh_dataset_cache: None) -> None:
    """Every test indexes its files anew (``tests/conftest.py``)."""


def error_of(path: Path, block_size: int) -> str:
    with pytest.raises(DataFileError) as err:
        ShareGPTFile.from_path(path, block_size=block_size)
    msg = str(err.value)
    assert msg.startswith(str(path)) and "\n" not in msg
    return msg


def json_error(raw: bytes) -> json.JSONDecodeError:
    with pytest.raises(json.JSONDecodeError) as err:
        json.loads(raw.decode("utf-8-sig"))
    return err.value


# --- the index pass against json.load ----------------------------------------------------------

@pytest.mark.parametrize("ensure_ascii", [False, True])
@pytest.mark.parametrize("indent", [None, 2, "\t"])
def test_block_boundaries_anywhere(tmp_path: Path, ensure_ascii: bool, indent: int | str | None
                                   ) -> None:
    data = tricky_entries()
    path = write(tmp_path, json.dumps(data, ensure_ascii=ensure_ascii, indent=indent))
    for block_size in TINY_BLOCKS:
        loaded = ShareGPTFile.from_path(path, block_size=block_size)
        assert len(loaded) == len(data)
        assert list(loaded) == data and [loaded[i] for i in range(len(data))] == data


@pytest.mark.parametrize("content", [
    "[]", " [ ] ", "\r\n[\r\n]\r\n", "\t[\n\t\n]\t", '[{"id":"a","conversations":[]}]',
    ' \n [ \r\n {"id": "a", "conversations": []} \t ,\n\n{"id": "b", "conversations": []}\n ] \n',
])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_whitespace_and_bom(tmp_path: Path, content: str, bom: bytes) -> None:
    path = write(tmp_path, bom + content.encode())
    for block_size in TINY_BLOCKS:
        assert list(ShareGPTFile.from_path(path, block_size=block_size)) == json.loads(content)


def test_numbers_cut_by_a_block_are_read_whole(tmp_path: Path) -> None:
    path = write(tmp_path, '[{"id": "a", "conversations": []}, 12345, true]')
    for block_size in TINY_BLOCKS:
        assert "entry 1: expected an object" in error_of(path, block_size)
        assert "got a number" in error_of(path, block_size)


def test_offsets_are_exact_bytes(tmp_path: Path) -> None:
    data = tricky_entries()
    raw = b"\xef\xbb\xbf" + json.dumps(data, ensure_ascii=False, indent=1).encode()
    path = write(tmp_path, raw)
    loaded = ShareGPTFile.from_path(path, block_size=3)
    for i, entry in enumerate(data):
        off, n = loaded._offsets[i], loaded._lengths[i]
        assert json.loads(raw[off:off + n]) == entry
        assert raw[off:off + 1] == b"{" and raw[off + n - 1:off + n] == b"}"


# --- a file cut short: truncated, not malformed ------------------------------------------------

def complete_before(entries: list[dict], text: str, cut_at: int, **dumps: object) -> int:
    """How many whole entries ``text[:cut_at]`` holds (``text`` is ``json.dumps(entries, **dumps)``)."""
    ends = [len(json.dumps(entries[:k], **dumps)) - (2 if dumps.get("indent") is not None else 1)
            for k in range(1, len(entries) + 1)]
    assert all(text[:end] == json.dumps(entries[:k + 1], **dumps)[:end] for k, end in enumerate(ends))
    return sum(end <= cut_at for end in ends)


def truncation_of(path: Path, block_size: int) -> Truncation:
    with pytest.raises(TruncatedError) as err:
        ShareGPTFile.from_path(path, block_size=block_size)
    msg = str(err.value)
    assert msg.startswith(f"{path}: the file ends ") and "\n" not in msg and "it looks truncated" in msg
    return err.value.truncation


@pytest.mark.parametrize("cut", ['"id": "c3', '"id": "c3-', "\\u00", "\\ud83d", "\\ud83d\\ude0",
                                 "1500", "12345678901234567890", '"gpt"', "[\n", "\u20ac", "tru", "1500.",
                                 "-", "]\n  },", "},\n  {"])
def test_truncated_file_reports_where_it_ends(tmp_path: Path, cut: str) -> None:
    data = tricky_entries()
    data[2]["n"] += [-1e-3, True]  # a "-" and a "tru" to cut at
    for flag in (False, True):
        text = json.dumps(data, ensure_ascii=flag, indent=2)
        if cut not in text:
            continue
        at = text.index(cut, text.index(cut[:1]) + 1 if cut == "-" else 0) + len(cut)
        raw, want = text[:at].encode(), complete_before(data, text, at, ensure_ascii=flag, indent=2)
        path = write(tmp_path, raw)
        for block_size in (1, 5, 64, 1 << 20):
            cut_short = truncation_of(path, block_size)
            assert (cut_short.complete, cut_short.size) == (want, len(raw))
            loaded = ShareGPTFile.from_path(path, block_size=block_size, allow_truncated=True)
            assert list(loaded) == data[:want] and loaded.truncation == cut_short


def test_every_cut_of_a_file_is_truncated_with_the_right_count(tmp_path: Path) -> None:
    entries = [{"id": f"c{i}", "conversations": [{"from": "human", "value": f'h\u00e9 "{i}" \u20ac\\'},
                                                  {"from": "gpt", "value": "ok\n\U0001F600"}]}
               for i in range(3)]
    text = json.dumps(entries, ensure_ascii=False, indent=2)
    raw = text.encode()
    for at in range(1, len(raw)):  # every byte: inside strings, characters, keys, between entries
        path = write(tmp_path, raw[:at])
        chars = len(raw[:at].decode("utf-8", errors="ignore"))
        want = complete_before(entries, text, chars, ensure_ascii=False, indent=2)
        for block_size in (3, 1 << 20):
            cut_short = truncation_of(path, block_size)
            assert (cut_short.complete, cut_short.size) == (want, at), at
    assert list(ShareGPTFile.from_path(write(tmp_path, raw))) == entries


@pytest.mark.parametrize("content, where", [
    ("[", "right after its opening '[' (byte {size}): it looks truncated (an interrupted download?); "
          "no complete conversation before it"),
    ('[{"id": "a", "conversations": []}', "after entry 0 (byte {size})"),
    ('[{"id": "a", "conversations": []},\n  ', "after entry 0 (byte {size})"),
    ('[{"id": "a", "conversations": []}, {"id": "b", ', "inside entry 1 (byte {size})"),
    ('[{"id": "a", "conversations": []}, {"id": "b", "conversations": [{"from": "hu',
     "inside entry 1 (byte {size}): it looks truncated (an interrupted download?); 1 complete conversation "
     "before it; pass --allow-truncated to use them"),
    ('[{"id": "a", "conversations": []}, {"id": "b", "conversations": []}, {"id": "\xe2\x82',
     "inside entry 2 (byte {size}): it looks truncated (an interrupted download?); 2 complete conversations"),
])
def test_truncation_message_says_where_and_how_to_go_on(tmp_path: Path, content: str, where: str) -> None:
    raw = content.encode("latin-1")
    path = write(tmp_path, raw)
    with pytest.raises(TruncatedError) as err:
        ShareGPTFile.from_path(path)
    assert str(err.value).startswith(f"{path}: the file ends {where.format(size=len(raw))}")
    assert isinstance(err.value, DataFileError) and "\n" not in str(err.value)
    assert Truncation(17_671, 125_509_632, True).message("f.json", "HINT") == (
        "f.json: the file ends inside entry 17,671 (byte 125,509,632): it looks truncated (an interrupted "
        "download?); 17,671 complete conversations before it; HINT")


@pytest.mark.parametrize("content, match", [
    ('[{"id": "a", "conversations": []}, {"id": x}, {"id": "b", "conversations": []}]', "Expecting value"),
    ('[{"id": "a", "conversations": []}, {"id": "b", "conversations": [}', "Expecting value"),
    ('[{"id": "a", "conversations": []}, {"id": "b" "conversations": [', "Expecting ',' delimiter"),
    ('[{"id": "a", "conversations": []}, {"id" "b", "conversations": [', "Expecting ':' delimiter"),
    ('[{"id": "a", "conversations": []}, {"id": "\x01', "Invalid control character"),
    ('[{"id": "a", "conversations": []}, {"id": "\\x', "Invalid \\escape"),
    ('[{"id": "a", "conversations": []}, {"id": "\\uzz', "Invalid \\uXXXX escape"),
    ('[{"id": "a", "conversations": []} x', "Expecting ',' delimiter"),
    ('[{"id": "a", "conversations": []}, trux', "Expecting value"),
    ('[{"id": "a", "conversations": []},]', "Expecting value"),
    ("tru", "Expecting value at line 1 column 1"),  # no array begun: not a truncated dataset
])
def test_malformed_json_is_not_called_truncated(tmp_path: Path, content: str, match: str) -> None:
    path = write(tmp_path, content)
    for block_size in (1, 7, 1 << 20):
        msg = error_of(path, block_size)
        assert f"not valid JSON: {match}" in msg and "truncated" not in msg
        with pytest.raises(DataFileError, match=re.escape(match)):
            ShareGPTFile.from_path(path, block_size=block_size, allow_truncated=True)


def test_a_message_ending_in_at_is_not_followed_by_another() -> None:
    window = _Window(io.BytesIO(b'["abc'), "f.json", 16)
    window.fill()
    msg = str(window.syntax_error("Unterminated string starting at", 1))
    assert msg == "f.json: not valid JSON: Unterminated string starting at line 1 column 2 (byte offset 1)"


# --- errors: the position json.load reports, plus the byte offset ------------------------------


@pytest.mark.parametrize("breakage", [("},\n  {", "}\n  {"), ('"gpt"', "'gpt'"), (": [", ": [}"),
                                      ("1500.0", "15e"), ("true", "tru"), ('"c', '"\x01c')])
def test_malformed_mid_file_names_line_column_and_byte(tmp_path: Path,
                                                       breakage: tuple[str, str]) -> None:
    entries = [dict(e, id=f"{e['id']}-{k}") for k in range(30) for e in tricky_entries()]
    text = json.dumps(entries, ensure_ascii=False, indent=2)
    middle = text.index(breakage[0], len(text) // 2)
    bad = (text[:middle] + breakage[1] + text[middle + len(breakage[0]):]).encode()
    err = json_error(bad)
    path = write(tmp_path, bad)
    for block_size in (7, 4096):
        msg = error_of(path, block_size)
        assert err.lineno > 100 and "truncated" not in msg
        # json's "Invalid control character at" gets one "at", not two
        assert (f"not valid JSON: {err.msg.removesuffix(' at')} at line {err.lineno} column {err.colno} "
                f"(byte offset {len(err.doc[:err.pos].encode())})") in msg


@pytest.mark.parametrize("content, match", [
    ("   ", "not valid JSON: Expecting value at line 1 column 4 (byte offset 3)"),
    ('[{"id": "a", "conversations": []},]', "not valid JSON: Expecting value at line 1 column 35"),
    ('[{"id": "a", "conversations": []}] x', "not valid JSON: Extra data at line 1 column 36"),
    ("[] []", "Extra data at line 1 column 4"),
    ('[{"id": "a", "conversations": []} {"id": "b"}]',
     "Expecting ',' delimiter at line 1 column 35"),
    ("nope", "not valid JSON: Expecting value at line 1 column 1"),
    ("  12", "expected a JSON array of conversations, got a number"),
    ("null", "expected a JSON array of conversations, got null"),
    ('"a long string that is never read to its end', "got a string"),
    ('{"id": "a", "conversations": [', "got an object"),
])
def test_top_level_errors(tmp_path: Path, content: str, match: str) -> None:
    path = write(tmp_path, content)
    for block_size in (1, 3, 1 << 20):
        assert re.search(re.escape(match), error_of(path, block_size))


def test_not_utf8_far_into_the_file_names_the_absolute_offset(tmp_path: Path) -> None:
    good = json.dumps(tricky_entries() * 20, ensure_ascii=False).encode()
    at = good.index(b"\xc3\xa9", len(good) // 2)  # an "é": make it invalid
    path = write(tmp_path, b"\xef\xbb\xbf" + good[:at] + b"\xc3(" + good[at + 2:])
    for block_size in (1, 2, 3, 4096):
        assert f"not UTF-8 (byte 0xc3 at byte offset {at + 3})" in error_of(path, block_size)
    cut = write(tmp_path, b'["\xe2\x82', "cut.json")  # a character cut by the end of the file
    assert truncation_of(cut, 1) == Truncation(0, 4, True)
    after = write(tmp_path, b'[]\xe2\x82', "after.json")  # ... where the JSON itself is whole
    assert "not UTF-8 (a character cut by the end of the file at byte offset 2)" in error_of(after, 1)


# --- reads after the index pass ----------------------------------------------------------------

def test_sequence_behaviour(tmp_path: Path) -> None:
    data = tricky_entries()
    path = write(tmp_path, json.dumps(data))
    loaded = ShareGPTFile.from_path(path)
    assert loaded[-1] == data[-1] and loaded[1:4] == data[1:4] and loaded[::3] == data[::3]
    assert loaded == data and loaded != data[1:] and loaded == ShareGPTFile.from_path(path)
    with pytest.raises(IndexError):
        loaded[len(data)]
    loaded[0]["id"] = "mutated"  # every read is a fresh dict: nothing shared is spoiled
    assert loaded[0]["id"] == data[0]["id"]
    assert repr(loaded) == f"ShareGPTFile({str(path)!r}, {len(data)} entries)"


def test_file_changed_after_indexing_raises(tmp_path: Path) -> None:
    data = tricky_entries()
    path = write(tmp_path, json.dumps(data))
    loaded = load_sharegpt(path)
    assert loaded[2] == data[2]
    write(tmp_path, json.dumps(data[::-1]))  # same size, new mtime
    os.utime(path, ns=(1, 1))
    for read in (lambda: loaded[2], lambda: list(loaded)):
        with pytest.raises(DataFileError, match="changed on disk after it was indexed") as err:
            read()
        assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)
    fresh = load_sharegpt(path)  # the cache notices and indexes again
    assert fresh is not loaded and fresh[2] == data[::-1][2]
    path.unlink()
    with pytest.raises(DataFileError, match="cannot read dataset file"):
        fresh[0]


# --- sampling is unchanged; memory is bounded --------------------------------------------------

def synth_file(tmp_path: Path, copies: int, indent: int | None = 2) -> tuple[Path, int]:
    """A generated file of ``copies`` x 300 conversations, ids made unique per copy."""
    base = generate_sharegpt(300, seed=11)
    entries = [dict(c, id=f"{c['id']}-{k}") for k in range(copies) for c in base]
    path = tmp_path / f"synth-{copies}.json"
    path.write_text(json.dumps(entries, ensure_ascii=False, indent=indent), encoding="utf-8")
    return path, path.stat().st_size


@pytest.mark.parametrize("seed, num_prompts", [(0, 200), (7, 1000), (3, 5000)])
def test_sampling_identical_to_json_load(tmp_path: Path, seed: int, num_prompts: int) -> None:
    path, _ = synth_file(tmp_path, 4)
    with open(path, encoding="utf-8-sig") as f:
        reference = json.load(f)
    config = SamplingConfig(num_prompts=num_prompts, seed=seed)
    want = sample_prompts(reference, config, estimate_tokens)
    got = sample_prompts(load_sharegpt(path), config, estimate_tokens)
    assert got == want and len(got.prompts) == min(num_prompts, len(want.prompts))
    assert got.prompts and got.examined == want.examined and got.dropped == want.dropped


def test_index_pass_memory_is_a_fraction_of_the_file(tmp_path: Path) -> None:
    path, size = synth_file(tmp_path, 6, indent=None)
    assert size > 3_000_000
    tracemalloc.start()
    try:
        loaded = ShareGPTFile.from_path(path, block_size=128 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(loaded) == 1800
    assert peak < size / 4, f"index pass peaked at {peak} bytes for a {size}-byte file"
    rng = random.Random(0)
    for i in rng.sample(range(len(loaded)), 20):
        assert loaded[i]["id"].endswith(f"-{i // 300}")
