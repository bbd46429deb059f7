"""The chunk loop (gamut.scanning.pipeline.scan_loop.scan_chunks): alignment, hits and writing on three
threads a chunk apart must give the chunks of one pass, in order, stop at the first error, and do
no work for chunks nobody takes."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from scan_cpu_engine import CpuEngine

from gamut.scanning.fasta import parse_miranda_fasta
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.scan_loop import ScanInput, scan_chunks

QUERIES = b">q1\nUGAGGUAGUAGGUUGUAUAGUU\n>q2\nUAGCAGCACGUAAAUAUUGGCG\n>q3\nACGU\n"
REFS = (b">r1\nACUAUACAACCUACUACCUCAAAAACUAUACAACCUACUACCUCA\n>r2\nCGCCAAUAUUUACGUGCUGCUAAAA\n"
        b">r3\nA\n>r4\nGGGGCCCCAAAAUUUUACUAUACAACCUACUACCUCA\n")


class CountingEngine(CpuEngine):
    """The reference engine, counting its calls; raises on call ``fail_at`` (0-based) if given."""

    def __init__(self, fail_at: int | None = None) -> None:
        super().__init__(1)
        self.calls = 0
        self.fail_at = fail_at
        self.lock = threading.Lock()

    def align(self, queries, references, pairs, params):
        with self.lock:
            call = self.calls
            self.calls += 1
        if call == self.fail_at:
            raise RuntimeError(f"engine failed on chunk {call}")
        return super().align(queries, references, pairs, params)


def scan_input() -> ScanInput:
    return ScanInput(parse_miranda_fasta(QUERIES, "q.fa"), parse_miranda_fasta(REFS, "r.fa"), ScanParams(score_threshold=60))


def summary(results) -> list[tuple]:
    return [(r.counter0, r.pairs.tolist(), r.hits.score.tolist(), r.hits.energy.tolist(), r.hits.reported.tolist())
            for r in results]


@pytest.mark.parametrize("chunk_pairs", [1, 2, 5, 12])
def test_chunks_come_in_order_with_consecutive_counters(chunk_pairs):
    si = scan_input()
    cells: list[int] = []
    results = [r for r, _ in scan_chunks(si, CountingEngine(), chunk_pairs=chunk_pairs, progress=cells.append)]
    pairs = np.concatenate([r.pairs for r in results])
    assert pairs.tolist() == si.pair_range(0, si.n_pairs).tolist()
    assert [r.counter0 for r in results] == list(np.cumsum([0] + [len(r) for r in results[:-1]]))
    assert sum(cells) == si.total_cells() and len(cells) == len(results)
    whole = [r for r, _ in scan_chunks(si, CountingEngine(), chunk_pairs=10**6)]
    assert sum(len(r.hits) for r in results) == sum(len(r.hits) for r in whole) > 0
    scores = np.concatenate([r.hits.score for r in results])
    assert scores.tolist() == np.concatenate([r.hits.score for r in whole]).tolist()


def test_an_engine_error_ends_the_scan_after_the_chunks_before_it():
    si = scan_input()
    engine = CountingEngine(fail_at=3)
    got = []
    with pytest.raises(RuntimeError, match="engine failed on chunk 3"):
        for result, _ in scan_chunks(si, engine, chunk_pairs=1):
            got.append(result)
    assert [r.counter0 for r in got] == [0, 1, 2]


def test_stopping_early_leaves_later_chunks_unaligned():
    si = scan_input()
    engine = CountingEngine()
    chunks = scan_chunks(si, engine, chunk_pairs=1)
    next(chunks)
    chunks.close()
    assert engine.calls <= 3  # the chunk taken and at most the two ahead of it
    assert si.n_pairs == 12


class ConcurrentEngine(CountingEngine):
    """Aligns ``concurrent_chunks`` chunks at once, each call taking a random time (so later chunks
    often finish first)."""

    concurrent_chunks = 3

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.rng = np.random.default_rng(seed)
        self.active = 0
        self.most = 0

    def align(self, queries, references, pairs, params):
        import time

        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
            pause = float(self.rng.uniform(0, 0.02))
        try:
            time.sleep(pause)
            return super().align(queries, references, pairs, params)
        finally:
            with self.lock:
                self.active -= 1


@pytest.mark.parametrize("seed", range(4))
def test_an_engine_of_several_lanes_gets_every_chunk_once_in_order(seed):
    """``concurrent_chunks`` (the GPU engine's 2): chunks aligned at once on several threads come
    out in order, each once, whichever finishes first."""
    si = scan_input()
    engine = ConcurrentEngine(seed)
    results = [r for r, _ in scan_chunks(si, engine, chunk_pairs=1)]
    assert [r.pairs.tolist() for r in results] == [si.pair_range(k, k + 1).tolist() for k in range(si.n_pairs)]
    plain = [r for r, _ in scan_chunks(si, CountingEngine(), chunk_pairs=1)]
    assert summary(results) == summary(plain)
    assert engine.most > 1  # chunks were aligned at once
