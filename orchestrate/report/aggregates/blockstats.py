"""Exact order statistics of values too many to sort in memory, read in blocks.

Stage: records → report (the arithmetic under ``chunks.py``'s pooled ITL and ``vllmstats.py``'s). A
million records pool about 64 million inter-chunk gaps; sorting them with their weights takes gigabytes.
Here a caller hands a function that yields the values block by block (the same blocks on every call),
and ``select`` finds the value at a cumulative weight by radix selection on the float64 bit patterns:
the first pass takes the totals and a weighted histogram of the top 20 bits, each further pass narrows
the bucket that holds a target by the next bits, until few enough values are left there to sort (usually
the second pass), or all 64 bits are fixed. The answer is one of the values, exactly, as a full sort
would give it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from orchestrate.report.aggregates.keptanswers import KeptAnswers

Blocks = Callable[[], Iterable[tuple[np.ndarray, np.ndarray | None]]]
"""Yields (values, weights) blocks, weights None for 1 each; called once per pass, the same every time."""

DIGITS = (20, 16, 16, 12)
"""Bits of the key each pass resolves (64 in all)."""
SORT_AT_MOST = 1 << 22
"""Values left in a target's bucket that are sorted instead of narrowed further (96 MB with weights)."""
_SIGN = np.uint64(1 << 63)


def fits(count: int) -> bool:
    """Few enough values to gather and sort at once (the exact computation of old, done as before)."""
    return count <= SORT_AT_MOST


@dataclass(frozen=True)
class Totals:
    """What the first pass gives: how many values, their weight, Σ value × weight, Σ weight × (value −
    mean)² (for a standard deviation; per block as numpy computes it, blocks merged by Chan's formula)
    and the extremes."""

    count: int
    weight: float
    weighted_sum: float
    m2: float
    min: float
    max: float

    @property
    def mean(self) -> float:
        return self.weighted_sum / self.weight

    def add(self, values: np.ndarray, weights: np.ndarray | None) -> "Totals":
        """One more block; ``weights`` None: 1 each (the same sums, without multiplying by ones)."""
        if weights is None:
            weight, weighted_sum = float(values.size), float(values.sum())
        else:
            weight, weighted_sum = float(weights.sum()), float((values * weights).sum())
        block_mean = weighted_sum / weight
        squares = (values - block_mean) ** 2
        m2 = float((squares if weights is None else squares * weights).sum())
        total = self.weight + weight
        delta = block_mean - (self.mean if self.weight else block_mean)
        return Totals(self.count + values.size, total, self.weighted_sum + weighted_sum,
                      self.m2 + m2 + delta * delta * self.weight * weight / total,
                      min(self.min, float(values.min())), max(self.max, float(values.max())))


@dataclass(frozen=True)
class _Search:
    """Where one target's value lies: among the ``count`` values whose key starts with the ``bits``
    bits of ``prefix``; ``below`` is the weight of all values under that range."""

    prefix: int
    bits: int
    below: float
    count: int

    def matches(self, keys: np.ndarray) -> np.ndarray | slice:
        return slice(None) if not self.bits else (keys >> np.uint64(64 - self.bits)) == np.uint64(self.prefix)

    @property
    def width(self) -> int:
        """Bits of the next digit."""
        return DIGITS[sum(1 for b in np.cumsum(DIGITS) if b <= self.bits)]

    def digits(self, keys: np.ndarray) -> np.ndarray:
        return ((keys >> np.uint64(64 - self.bits - self.width)) & np.uint64((1 << self.width) - 1)).astype(np.intp)

    def narrowed(self, weight: np.ndarray, counts: np.ndarray, target: float) -> "_Search":
        """The bucket of the histogram (of the next digit) where the cumulative weight reaches ``target``."""
        cum = self.below + np.cumsum(weight)
        present = np.flatnonzero(counts)
        d = int(np.clip(np.searchsorted(cum, target, side="left"), present[0], present[-1]))
        return _Search((self.prefix << self.width) | d, self.bits + self.width,
                       float(cum[d - 1]) if d else self.below, int(counts[d]))


Pass = tuple[Totals | None, tuple[np.ndarray, np.ndarray]]
"""A first pass: the totals (None for no values) and the first digit's (weight, count) histogram."""


@dataclass(frozen=True)
class NamedBlocks:
    """Blocks that say which values they yield: ``digest`` of where they lie in ``source``, a buffer they are read
    from. Two streams with the same source and digest yield the same values in the same order (their weights
    may differ: the headline's ITL weighs a gap by its chunk's tokens, vLLM's does not), so ``select``'s first
    pass over them is made once."""

    blocks: Blocks
    source: np.ndarray
    digest: bytes
    weighted: bool

    def __call__(self) -> Iterable[tuple[np.ndarray, np.ndarray | None]]:
        return self.blocks()


_FIRST_PASSES: KeptAnswers[dict[bool, Pass]] = KeptAnswers(2)
"""The last first passes of named blocks (by source and digest), weighted and not."""


def select(blocks: Blocks, targets: Callable[[Totals], Sequence[float]]) -> tuple[Totals, list[float]] | None:
    """The totals, and for each target t (``targets`` of the totals): the smallest value v whose
    cumulative weight W(≤ v) reaches t (the largest value when t exceeds the total by rounding).
    None for no values."""
    top = _Search(0, 0, 0.0, 0)
    total, (weight, counts) = _first_pass(blocks, top)
    if total is None:
        return None
    wanted = list(targets(total))
    searches = {i: top.narrowed(weight, counts, t) for i, t in enumerate(wanted)}
    found: dict[int, float] = {}
    while True:
        for i in [i for i, s in searches.items() if s.bits == 64]:  # one bit pattern: the value itself
            found[i] = _value(searches.pop(i).prefix)
        if not searches:
            return total, [found[i] for i in range(len(wanted))]
        groups = {(s.prefix, s.bits): s for s in searches.values()}
        sorting = {g: s for g, s in groups.items() if s.count <= SORT_AT_MOST}
        candidates = _candidates(blocks, list(sorting.values()))
        for i, s in list(searches.items()):
            if (s.prefix, s.bits) in sorting:
                found[i] = _sorted_pick(candidates[(s.prefix, s.bits)], s.below, wanted[i])
                del searches[i]
        hist = {g: _histograms(blocks, s)[0][1] for g, s in groups.items() if g not in sorting}
        for i, s in searches.items():
            searches[i] = s.narrowed(*hist[(s.prefix, s.bits)], wanted[i])


def _first_pass(blocks: Blocks, top: _Search) -> Pass:
    """The totals and the first digit's histogram; of named blocks, both weighted and not, kept for the next
    select over the same values."""
    if not isinstance(blocks, NamedBlocks):
        return _histograms(blocks, top, first=True)[0]
    both = _FIRST_PASSES.get(blocks.source, blocks.digest)
    if both is None:
        weighted, unweighted = _histograms(blocks, top, first=True)
        both = _FIRST_PASSES.keep(blocks.source, blocks.digest, {True: weighted, False: unweighted})
    return both[blocks.weighted]


def _histograms(blocks: Blocks, search: _Search, first: bool = False) -> tuple[Pass, Pass]:
    """One pass: the weight and count of each value of the next digit among the values ``search``
    holds (and, on the first pass, the totals); then the same as if every weight were 1."""
    size = 1 << search.width
    weight, counts = np.zeros(size), np.zeros(size, dtype=np.int64)
    total = plain = Totals(0, 0.0, 0.0, 0.0, np.inf, -np.inf)
    for values, weights in blocks():
        if not values.size:
            continue
        if first:
            total = total.add(values, None if weights is None else np.asarray(weights, dtype=float))
            plain = total if weights is None else plain.add(values, None)
        keys = _keys(values)
        m = search.matches(keys)
        digits = search.digits(keys[m])
        found = np.bincount(digits, minlength=size)
        counts += found
        weight += found if weights is None else np.bincount(digits, _weights(values, weights)[m], size)
    return ((total if total.count else None), (weight, counts)), ((plain if plain.count else None),
                                                                   (counts.astype(float), counts))


def _candidates(blocks: Blocks, searches: list[_Search]) -> dict[tuple[int, int], list[tuple[np.ndarray, np.ndarray]]]:
    """One pass: the values (and weights) each search holds; none when no search is given."""
    out: dict[tuple[int, int], list[tuple[np.ndarray, np.ndarray]]] = {(s.prefix, s.bits): [] for s in searches}
    if not searches:
        return out
    for values, weights in blocks():
        keys, w = _keys(values), _weights(values, weights)
        for s in searches:
            m = s.matches(keys)
            out[(s.prefix, s.bits)].append((values[m], w[m]))
    return out


def concatenated(blocks: Blocks) -> tuple[np.ndarray, np.ndarray | None]:
    """Every block's values (and weights) in one array each: for streams small enough to hold twice."""
    parts = [(v, w) for v, w in blocks()]
    values = np.concatenate([v for v, _ in parts]) if parts else np.empty(0)
    if all(w is None for _, w in parts):
        return values, None
    return values, np.concatenate([_weights(v, w) for v, w in parts])


def _sorted_pick(parts: list[tuple[np.ndarray, np.ndarray]], below: float, target: float) -> float:
    values = np.concatenate([v for v, _ in parts])
    order = np.argsort(values, kind="stable")
    cum = below + np.cumsum(np.concatenate([w for _, w in parts])[order])
    return float(values[order][min(int(np.searchsorted(cum, target, side="left")), values.size - 1)])


def _weights(values: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    return np.ones(values.size) if weights is None else np.asarray(weights, dtype=float)


def _value(key: int) -> float:
    """The inverse of ``_keys`` for one key."""
    bits = key ^ (1 << 63) if key >> 63 else ~key & ((1 << 64) - 1)
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


def _keys(values: np.ndarray) -> np.ndarray:
    """float64 → uint64 in the same order: a negative's other bits flipped, then the sign bit."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    return (bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))).view(np.uint64) ^ _SIGN
