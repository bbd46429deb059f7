"""Measurement knobs of the GPU MFE engine's batch launches (``gamut.folding.turner.gpu_mfe``), read
from the environment in one place (:meth:`BatchTuning.from_env`), and the shape a batch launch
takes under them (:class:`BatchShape`). Left unset, every launch is the plain ``tmfe_batch`` one.

- ``GAMUT_TMFE_BLOCKS_PER_SM=K``: K blocks of a batch launch per multiprocessor (fewer work areas:
  the launch's areas may then fit the L2 cache, or even L1);
- ``GAMUT_TMFE_WARPS=W``: launches of one-warp blocks (sequences up to 64 nt) as blocks of W warps,
  each warp folding sequences of its own (``tmfe_batch_warps``: warp barriers, no block barrier);
- ``GAMUT_TMFE_SHARED_UPTO=N``: launches whose longest sequence has at most N letters keep their
  work areas in shared memory (``tmfe_batch_shared``, or ``tmfe_batch_warps`` with W), where they fit.

``bench/turner_batch_variants.py`` measures them side by side (docs/fold_turner_gpu.md).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from gamut.errors import InputError

ENV_BLOCKS_PER_SM = "GAMUT_TMFE_BLOCKS_PER_SM"
ENV_WARPS = "GAMUT_TMFE_WARPS"
ENV_SHARED_UPTO = "GAMUT_TMFE_SHARED_UPTO"
#: Registers of a multiprocessor, and the unit a warp's registers are allocated in (Hopper, Ampere).
SM_REGISTERS = 65536
REGISTER_UNIT = 256
#: Shared memory the runtime keeps per block (compute capability 8.0 and newer).
BLOCK_RESERVED_SHARED = 1024
#: Most dynamic shared memory a launch may ask for without opting in.
DEFAULT_SHARED_LIMIT = 48 * 1024


def _env_int(environ: Mapping[str, str], name: str, low: int, high: int) -> int:
    text = environ.get(name, "").strip()
    if not text:
        return 0
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise InputError(f"{name}={text!r}: expected a whole number from {low} to {high} (unset: the default)")
    return value


@dataclass(frozen=True)
class BatchTuning:
    """How batch launches run: ``blocks_per_sm`` (0: as many as the threads allow), ``warps`` (0: a
    block folds one sequence at a time; W: blocks of W warps, a sequence each, for one-warp classes),
    ``shared_upto`` (0: work areas in global memory; N: in shared memory for launches of at most N
    letters). The default is the plain launch."""

    blocks_per_sm: int = 0
    warps: int = 0
    shared_upto: int = 0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> BatchTuning:
        """The knobs from ``GAMUT_TMFE_*`` (``environ``: ``os.environ`` unless given); a bad value
        raises :class:`InputError` naming the variable."""
        environ = os.environ if environ is None else environ
        return cls(blocks_per_sm=_env_int(environ, ENV_BLOCKS_PER_SM, 1, 32),
                   warps=_env_int(environ, ENV_WARPS, 1, 32),
                   shared_upto=_env_int(environ, ENV_SHARED_UPTO, 1, 1 << 20))

    def label(self) -> str:
        """A short name for tables: ``default``, or the knobs set, e.g. ``bps16+w4+shared64``."""
        parts = [f"bps{self.blocks_per_sm}" if self.blocks_per_sm else "",
                 f"w{self.warps}" if self.warps else "", f"shared{self.shared_upto}" if self.shared_upto else ""]
        return "+".join(p for p in parts if p) or "default"


@dataclass(frozen=True)
class BatchShape:
    """One batch launch as it runs: ``kernel`` (``tmfe_batch``, ``tmfe_batch_shared`` or
    ``tmfe_batch_warps``), ``blocks`` of ``threads`` threads, ``groups`` sequences a block folds at
    once (1, or its warps), ``shared_bytes`` of dynamic shared memory a block (0: the work areas are
    in global memory, one per group of the launch)."""

    kernel: str
    blocks: int
    threads: int
    groups: int = 1
    shared_bytes: int = 0

    @property
    def in_shared(self) -> bool:
        return self.shared_bytes > 0

    @property
    def global_areas(self) -> int:
        """Work areas the launch needs in global memory."""
        return 0 if self.in_shared else self.blocks * self.groups


def resident_blocks(num_regs: int, static_shared: int, threads: int, shared_bytes: int, shared_per_sm: int,
                    threads_per_sm: int = 2048, blocks_per_sm: int = 32) -> int:
    """Blocks of a kernel one multiprocessor holds at once: limited by its threads, its registers
    (``num_regs`` a thread, allocated per warp in units of :data:`REGISTER_UNIT`), its shared memory
    (``static_shared`` + ``shared_bytes`` + :data:`BLOCK_RESERVED_SHARED` a block, of
    ``shared_per_sm``) and its most resident blocks. (CUDA's occupancy calculator, for the limits
    that matter here; a batch launch's blocks must all be resident, as each loops over its share.)"""
    warps = -(-threads // 32)
    per_warp = -(-max(1, num_regs) * 32 // REGISTER_UNIT) * REGISTER_UNIT
    return min(blocks_per_sm, threads_per_sm // threads, SM_REGISTERS // (per_warp * warps),
               shared_per_sm // (static_shared + shared_bytes + BLOCK_RESERVED_SHARED))
