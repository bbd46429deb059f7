"""Where an output may go, decided before any work: never onto an input, never a read-only file,
devices and pipes written in place, and the format and compression a file's name asks for."""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gamut.errors import UsageError

PathLike = str | os.PathLike


@dataclass(frozen=True)
class OutputTarget:
    """An output path as given (``shown``, for messages) and the file that is really written:
    ``real`` is a symlink's final target, so that replacing it leaves the link a link."""

    shown: str
    real: Path
    existing: os.stat_result | None

    @property
    def direct(self) -> bool:
        """Written in place: a character device, a FIFO or a socket has no contents to replace,
        and renaming a file over it would destroy it."""
        return self.existing is not None and not stat.S_ISREG(self.existing.st_mode)


def is_stdout(path: PathLike | None) -> bool:
    return path is None or os.fspath(path) == "-"


def _stat(path: PathLike) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def check_output(path: PathLike, inputs: Iterable[PathLike | None] = ()) -> OutputTarget:
    """The target of output ``path``, or a one-line :class:`UsageError` when writing it would lose
    data or cannot work: it is one of ``inputs`` (same device and inode, so symlinks and hard
    links count), a directory, a file without write permission bits (checked on the mode, since
    ``os.access`` answers yes to root), or its directory is missing."""
    shown = os.fspath(path)
    real = Path(os.path.realpath(shown)) if os.path.islink(shown) else Path(shown)
    try:
        existing = _stat(real)
    except OSError as exc:  # e.g. a symlink loop, a directory we may not search
        raise UsageError(f"cannot write {shown}: {exc.strerror or exc}") from None
    if existing is None:
        directory = real.parent if str(real.parent) else Path(".")
        if not directory.is_dir():
            raise UsageError(f"cannot write {shown}: the directory {directory} does not exist")
        return OutputTarget(shown, real, None)
    if stat.S_ISDIR(existing.st_mode):
        raise UsageError(f"cannot write {shown}: it is a directory")
    if stat.S_ISREG(existing.st_mode):
        same = _same_input(existing, inputs)
        if same is not None:
            raise UsageError(f"cannot write {shown}: it is the input file {same}; choose another output")
        if existing.st_mode & 0o222 == 0:
            raise UsageError(f"cannot write {shown}: it is read-only (no write permission)")
    return OutputTarget(shown, real, existing)


def _same_input(output: os.stat_result, inputs: Iterable[PathLike | None]) -> str | None:
    """The first of ``inputs`` that is the file ``output`` (missing inputs are the readers' to report)."""
    for item in inputs:
        if item is None or is_stdout(item):
            continue
        try:
            st = os.stat(item)
        except (OSError, ValueError):
            continue
        if (st.st_dev, st.st_ino) == (output.st_dev, output.st_ino):
            return os.fspath(item)
    return None


def check_outputs(outputs: Iterable[PathLike | None], inputs: Iterable[PathLike | None] = ()) -> None:
    """:func:`check_output` for each output that is a path (standard output needs no check)."""
    inputs = list(inputs)
    for path in outputs:
        if not is_stdout(path):
            check_output(path, inputs)


def same_outputs(outputs: Iterable[PathLike | None]) -> str | None:
    """The first output path that names the same file as an earlier one (after links and
    relative parts: ``hits.tsv`` and ``./hits.tsv``, a symlink and its target, two hard links),
    or None. Standard output is not a file here."""
    seen: set = set()
    for path in outputs:
        if is_stdout(path):
            continue
        shown = os.fspath(path)
        try:
            st = os.stat(shown)
            keys = {("inode", st.st_dev, st.st_ino), ("path", os.path.realpath(shown))}
        except OSError:
            keys = {("path", os.path.realpath(shown))}
        if keys & seen:
            return shown
        seen |= keys
    return None


#: Compression by the last suffix of a file's name: what :mod:`gamut.io.compressed` writes for each
#: in an output (the readers take the same suffixes: :data:`gamut.io.fasta.COMPRESSION_SUFFIXES`).
COMPRESSIONS = {".gz": "gzip", ".bgz": "bgzf", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd", ".zstd": "zstd"}


@dataclass(frozen=True)
class FormatRules:
    """How one command's output names map to its formats: ``by_suffix`` (``".tsv"`` -> ``"tsv"``,
    lower case), the formats a ``.bgz`` name may hold (``tabix``: BGZF, which tabix indexes when the
    lines are sorted by position) and those compressed inside (``self_compressed``: Parquet), which
    take no compression suffix."""

    by_suffix: Mapping[str, str]
    tabix: frozenset[str] = frozenset()
    self_compressed: frozenset[str] = frozenset()


def output_compression(path: PathLike | None) -> str | None:
    """The compression an output's name asks for (:data:`COMPRESSIONS`), or None (also for
    standard output)."""
    if is_stdout(path):
        return None
    return COMPRESSIONS.get(Path(os.fspath(path)).suffix.lower())


def _name_suffix(path: PathLike) -> tuple[str, str]:
    """The suffix of ``path``'s name under its compression suffix (lower case; ``""``: none) and
    that compression suffix (``""``: none): ``hits.TSV.gz`` -> ``(".tsv", ".gz")``."""
    name = Path(os.fspath(path))
    compression = name.suffix.lower() if name.suffix.lower() in COMPRESSIONS else ""
    if compression:
        name = name.with_suffix("")
    return name.suffix.lower(), compression


def suffix_format(path: PathLike | None, rules: FormatRules) -> str | None:
    """The format the suffix of ``path`` names (under a compression suffix), or None: standard
    output, no suffix, or a suffix no format owns."""
    if is_stdout(path):
        return None
    return rules.by_suffix.get(_name_suffix(path)[0])


def format_for_output(path: PathLike | None, explicit: str | None, rules: FormatRules, default: str,
                      chosen_by: str | None = None) -> str:
    """The format of output ``path``: the one its suffix names, under a compression suffix
    (``hits.tsv.gz``: tsv); ``explicit`` (``--format``) when given; ``default`` for standard
    output and a name without a suffix. A one-line :class:`UsageError` when the suffix names a
    format other than ``explicit``, when no format owns it and none is given (``hits.csv``), or
    when the compression does not suit the format (:func:`check_compression`). ``chosen_by``
    says in messages what chose ``explicit`` (default ``--format NAME``)."""
    if is_stdout(path):
        return explicit or default
    shown = os.fspath(path)
    suffix, _ = _name_suffix(path)
    named = rules.by_suffix.get(suffix)
    if explicit is not None and named is not None and named != explicit:
        own = [s for s, f in rules.by_suffix.items() if f == explicit]
        advice = f"use the suffix {' or '.join(own)}" if own else "rename it"
        raise UsageError(f"{shown}: the suffix {suffix} names the {named} format, not "
                         f"{chosen_by or '--format ' + explicit}; {advice}{'' if chosen_by else ' or drop --format'}")
    fmt = explicit or named or (default if not suffix else None)
    if fmt is None:
        hint = "comma-separated values are not written (.tsv is tab-separated); " if suffix == ".csv" else ""
        raise UsageError(f"{shown}: {hint}no output format has the suffix {suffix} (suffixes: "
                         f"{', '.join(rules.by_suffix)}; compressed: add {', '.join(COMPRESSIONS)}); "
                         "--format writes it anyway")
    check_compression(path, fmt, rules)
    return fmt


def check_compression(path: PathLike | None, fmt: str, rules: FormatRules) -> None:
    """A one-line :class:`UsageError` when the compression suffix of ``path`` does not suit format
    ``fmt``: ``.bgz`` (BGZF) only for the formats tabix indexes, and none for a format compressed
    inside (Parquet)."""
    compression = output_compression(path)
    if compression is None:
        return
    shown, suffix = os.fspath(path), _name_suffix(path)[1]
    if fmt in rules.self_compressed:
        raise UsageError(f"{shown}: the {fmt} format compresses inside; drop {suffix}")
    if compression == "bgzf" and fmt not in rules.tabix:
        only = f" (only for {', '.join(sorted(rules.tabix))})" if rules.tabix else ""
        raise UsageError(f"{shown}: .bgz (BGZF, for tabix) is not written for {fmt}{only}; use .gz")
