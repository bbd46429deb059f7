"""Compressed outputs: a writer that compresses into an open binary file and leaves it open, so
that :mod:`gamut.io.atomic` renames the file only once the compressed stream is complete.

gzip, bzip2, xz and zstd go through xopen (gzip with ISA-L's threaded writer where installed, off
the writing thread; the others in this process, so that no helper program outlives a killed run).
BGZF (``.bgz``) is written by :class:`BgzfWriter`.
"""
from __future__ import annotations

import io
import struct
import zlib
from typing import BinaryIO

from xopen import xopen

try:  # ISA-L's deflate: several times zlib's speed; xopen installs it on x86-64 and aarch64
    from isal import isal_zlib as _deflate_module
    _LEVEL = 2  # ISA-L levels are 0-3; 2 is its default
except ImportError:  # pragma: no cover - other platforms
    _deflate_module = zlib
    _LEVEL = 6

#: xopen's names of the compressions of :data:`gamut.io.outputs.COMPRESSIONS`.
_XOPEN_FORMATS = {"gzip": "gz", "bzip2": "bz2", "xz": "xz", "zstd": "zst"}


def compressing_writer(raw: BinaryIO, compression: str) -> BinaryIO:
    """A binary writer that writes ``raw`` compressed (a name of
    :data:`gamut.io.outputs.COMPRESSIONS`); closing it completes the stream and leaves ``raw`` open."""
    if compression == "bgzf":
        return BgzfWriter(raw)
    # threads=1: gzip compresses on one thread of ISA-L's own; 0: the others in this process
    return xopen(raw, "wb", format=_XOPEN_FORMATS[compression], threads=1 if compression == "gzip" else 0)


#: Input bytes per BGZF block: as htslib, a little under 64 KiB, so that even a block that does
#: not compress (stored) fits the 64 KiB a block may be.
BGZF_BLOCK_INPUT = 0xFF00
#: The largest BGZF block, header and trailer included (its BSIZE field holds the size - 1).
BGZF_MAX_BLOCK = 1 << 16
#: The empty block that ends a BGZF file (SAM/BAM specification, section 4.1.2).
BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
_HEADER = struct.Struct("<4BI2BH2BHH")  # gzip header with the FEXTRA field: XLEN 6, subfield BC, BSIZE


class BgzfWriter(io.BufferedIOBase):
    """BGZF (SAM/BAM specification, section 4.1): gzip members of at most 64 KiB, each holding at
    most :data:`BGZF_BLOCK_INPUT` input bytes and a ``BC`` extra subfield with its size - 1, then
    the empty :data:`BGZF_EOF` block. Any gzip reader reads it; tabix and htslib seek in it.

    Written here because no well-kept light library writes BGZF: Biopython's ``bgzf`` and pysam
    bring whole toolkits (and pysam a C build) for these few lines. Blocks are deflated with
    ISA-L where installed (else zlib). Closing writes the last block and the EOF block and
    leaves ``raw`` open; :meth:`flush` writes no partial block (a text layer flushes often).
    """

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._raw = raw
        self._pending = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if self.closed:
            raise ValueError("write to a closed BGZF writer")
        view = memoryview(data).cast("B")
        size = len(view)
        start = 0
        if self._pending:
            start = min(size, BGZF_BLOCK_INPUT - len(self._pending))
            self._pending += view[:start]
            if len(self._pending) < BGZF_BLOCK_INPUT:
                return size
            self._raw.write(bgzf_block(self._pending))
            self._pending.clear()
        while size - start >= BGZF_BLOCK_INPUT:
            self._raw.write(bgzf_block(view[start:start + BGZF_BLOCK_INPUT]))
            start += BGZF_BLOCK_INPUT
        self._pending += view[start:]
        return size

    def flush(self) -> None:
        if not self.closed:
            self._raw.flush()

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self._pending:
                self._raw.write(bgzf_block(self._pending))
                self._pending.clear()
            self._raw.write(BGZF_EOF)
            self._raw.flush()
        finally:
            super().close()


def bgzf_block(data) -> bytes:
    """One BGZF block of ``data`` (at most :data:`BGZF_BLOCK_INPUT` bytes): deflated, or stored
    when deflating does not make it fit."""
    body = _deflate_module.compress(data, _LEVEL, wbits=-15)
    if len(body) + _HEADER.size + 8 > BGZF_MAX_BLOCK:
        body = zlib.compress(data, 0, wbits=-15)  # stored blocks: 5 bytes each over the data
    size = _HEADER.size + len(body) + 8
    header = _HEADER.pack(31, 139, 8, 4, 0, 0, 255, 6, ord("B"), ord("C"), 2, size - 1)
    return b"".join((header, body, struct.pack("<II", zlib.crc32(data), len(data))))
