"""Sequence and annotation readers, and writers that never leave half-written files."""
from gamut.io.atomic import atomic_output
from gamut.io.fasta import FastaRecord, read_fasta

__all__ = ["FastaRecord", "atomic_output", "read_fasta"]
