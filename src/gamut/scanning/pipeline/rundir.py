"""Run directories (``--run-dir``): finished partitions kept on disk, so that a rerun computes only the rest.

Every finished partition is stored atomically (``parts/NNNNNNNN.part``), its length and SHA-256
recorded in ``manifest.json``, and a later run with the same directory computes only the missing
ones and those that no longer verify. ``manifest.json`` also records the inputs' fingerprints,
the options and the partitioning; a run whose inputs or options differ is refused. ``runs.log``
and ``computed.log`` record which run computed which partition.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from gamut.errors import GamutError, UsageError
from gamut.io import tempfiles
from gamut.io.inputs import is_regular_file
from gamut.io.interrupt import temporary_file
from gamut.io.textout import raw_text
from gamut.scanning.fasta import SeqRecord
from gamut.scanning.params import ScanParams

RUN_DIR_VERSION = 1
#: Files up to this size are fingerprinted by their whole content; larger ones by size, mtime and
#: the hash of their first and last MiB.
FULL_HASH_LIMIT = 64 << 20


def file_fingerprint(path: str | os.PathLike) -> dict:
    """Size and SHA-256 of a file's content; for files over :data:`FULL_HASH_LIMIT`, size, mtime
    and the SHA-256 of the first and last MiB."""
    st = os.stat(path)
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        if st.st_size <= FULL_HASH_LIMIT:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
            return {"size": st.st_size, "sha256": digest.hexdigest()}
        digest.update(handle.read(1 << 20))
        handle.seek(-(1 << 20), os.SEEK_END)
        digest.update(handle.read(1 << 20))
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "head_tail_sha256": digest.hexdigest()}


def input_fingerprint(path: str | os.PathLike | None, records: Sequence[SeqRecord]) -> dict:
    """:func:`file_fingerprint` of a regular file; of standard input or a pipe, which cannot be
    read again, the number of its records and the SHA-256 of their ids, descriptions and letters."""
    if path is not None and is_regular_file(path):
        return file_fingerprint(path)
    digest = hashlib.sha256()
    for record in records:
        digest.update(b"\n".join((raw_text(record.id), raw_text(record.description), record.sequence, b"")))
    return {"records": len(records), "records_sha256": digest.hexdigest()}


def scan_options(params: ScanParams, formats: str | Sequence[str], quiet: bool, keyval: bool,
                 annotation: dict | None = None) -> dict:
    """The settings that shape a partition's bytes (the restrict list by its hash): the outputs'
    formats (one: its name; several: the list, each once in a fixed order, as a part holds them;
    their paths and order on the command line do not matter), and the annotation file's
    fingerprint when there is one."""
    fields = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
    fields = {k: dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v for k, v in fields.items()}
    if fields.get("site_access") is None:  # as run directories made before --accessibility hold them
        fields.pop("site_access", None)
    restrict = fields.pop("restrict")
    fields["restrict_sha256"] = None if restrict is None else hashlib.sha256(
        "\n".join(f"{q}\t{r}" for q, r in sorted(restrict)).encode("utf-8", "surrogateescape")).hexdigest()
    if not isinstance(formats, str):
        formats = formats[0] if len(formats) == 1 else list(formats)
    options = {"params": fields, "format": formats, "quiet": bool(quiet), "keyval": bool(keyval)}
    if annotation is not None:
        options["annotation"] = annotation
    return json.loads(json.dumps(options))  # as the manifest holds them: tuples are lists


class RunDir:
    """A run directory: ``manifest.json``, ``parts/NNNNNNNN.part`` and the run logs.

    The manifest records each stored part's length and SHA-256 (``parts``); a part is reused
    only when it matches them, so a part truncated or changed since (a full disk, a copy cut
    short, an edit) is computed again rather than copied into the output.
    """

    def __init__(self, path: str | os.PathLike, inputs: dict, options: dict, asked: dict | None,
                 default: dict) -> None:
        """Open or start ``path``; refuse when its inputs or options differ, or when the
        partitioning ``asked`` for (``{"cells": ..., "pairs": ...}``, None if not given)
        differs from the directory's. A new directory takes ``asked`` or ``default``."""
        self.path = Path(path)
        self.parts = self.path / "parts"
        _usable_directory(self.path)
        manifest_path = self.path / "manifest.json"
        if manifest_path.exists():
            try:
                manifest = json.loads(manifest_path.read_text())
            except (OSError, ValueError) as exc:
                raise UsageError(f"--run-dir {self.path}: unreadable manifest.json ({exc})") from None
            self._check(manifest, inputs, options, asked)
        else:
            if any(not _is_temporary(entry.name) for entry in self.path.iterdir()):
                raise UsageError(f"--run-dir {self.path} exists and is not a gamut run directory (no manifest.json)")
            manifest = {"gamut_run_dir": RUN_DIR_VERSION, "inputs": inputs, "options": options,
                        "partitioning": asked or default, "runs": 0}
        # A run killed outright (SIGKILL, power loss) leaves its temporary files: those whose
        # writer is gone are removed (gamut.io.tempfiles).
        tempfiles.remove_stale(self.path, every_target=True)
        if self.parts.is_dir():
            tempfiles.remove_stale(self.parts, every_target=True)
        manifest["runs"] = int(manifest.get("runs", 0)) + 1
        manifest["parts"] = dict(manifest.get("parts") or {})
        self.manifest = manifest
        self.run = manifest["runs"]
        with self._writing("start the run"):
            self.parts.mkdir(parents=True, exist_ok=True)
            self._save_manifest()
            with open(self.path / "runs.log", "a") as log:
                log.write(f"{self.run}\tpid {os.getpid()}\n")

    def _check(self, manifest: dict, inputs: dict, options: dict, partitioning: dict | None) -> None:
        where = f"--run-dir {self.path} was started with"
        if manifest.get("gamut_run_dir") != RUN_DIR_VERSION:
            raise UsageError(f"--run-dir {self.path}: not a gamut run directory of version {RUN_DIR_VERSION}")
        if manifest.get("inputs") != inputs:
            names = sorted(k for k in set(inputs) | set(manifest.get("inputs", {}))
                           if inputs.get(k) != manifest.get("inputs", {}).get(k))
            raise UsageError(f"{where} different input files ({', '.join(names)} changed); "
                             "use a new directory or the original inputs")
        if manifest.get("options") != options:
            old, new = _flat(manifest.get("options", {})), _flat(options)
            names = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            if names == ["format"]:
                kept = old.get("format")
                kept = ", ".join(kept) if isinstance(kept, list) else kept
                raise UsageError(f"{where} outputs of format {kept}; give outputs of those formats "
                                 "(any file names, any order) or use a new directory")
            raise UsageError(f"{where} different options ({', '.join(names)}); use a new directory or the same options")
        kept = manifest.get("partitioning")
        if partitioning is not None and kept != partitioning:
            raise UsageError(f"{where} partitions of {kept.get('cells')} cells and {kept.get('pairs')} pairs; "
                             "leave --partition-cells out or give the same value")

    @property
    def partitioning(self) -> dict:
        return self.manifest["partitioning"]

    def _part(self, index: int) -> Path:
        return self.parts / f"{index:08d}.part"

    @contextlib.contextmanager
    def _writing(self, what: str) -> Iterator[None]:
        """A failed write to the directory (full disk, removed directory) as one line."""
        try:
            yield
        except OSError as exc:
            raise GamutError(f"--run-dir {self.path}: cannot {what}: {exc.strerror or exc}") from None

    def _save_manifest(self) -> None:
        _atomic_write(self.path / "manifest.json", json.dumps(self.manifest, indent=1, sort_keys=True).encode())

    def finished(self, count: int, report: Callable[[str], None] = lambda line: None) -> set[int]:
        """The partitions below ``count`` stored whole: their part has the recorded length and
        SHA-256. Parts that do not verify are removed (and ``report`` told, in one line)."""
        records = self.manifest["parts"]
        good: set[int] = set()
        bad: dict[str, list[int]] = {}
        for k in range(count):
            path = self._part(k)
            if not path.exists():
                continue
            problem = _verify(path, records.get(str(k)))
            if problem is None:
                good.add(k)
                continue
            bad.setdefault(problem, []).append(k)
            records.pop(str(k), None)
            with contextlib.suppress(OSError):
                path.unlink()
        if bad:
            with self._writing("update manifest.json"):
                self._save_manifest()
        for problem, indices in bad.items():
            one = len(indices) == 1
            report(f"gamut: run dir {self.path}: {'part' if one else 'parts'} {_ranges(indices)} "
                   f"{problem}; recomputing {'it' if one else 'them'}")
        return good

    def store(self, index: int, data: bytes) -> None:
        """Store partition ``index`` atomically, then record its length and SHA-256."""
        with self._writing(f"store partition {index}"):
            _atomic_write(self._part(index), data)
            self.manifest["parts"][str(index)] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            self._save_manifest()
            with open(self.path / "computed.log", "a") as log:
                log.write(f"{self.run}\t{index}\n")

    def load(self, index: int) -> bytes:
        """A stored partition's bytes. Its checksum was verified at the start (or made when it was
        stored); reading it back checks the length only, which a part cut short since shows."""
        try:
            data = self._part(index).read_bytes()
        except OSError as exc:
            data, reason = None, exc.strerror or str(exc)
        record = self.manifest["parts"].get(str(index)) or {}
        if data is not None and len(data) == record.get("bytes"):
            return data
        if data is not None:
            reason = "it changed during this run"
        raise GamutError(f"--run-dir {self.path}: partition {index} cannot be read back ({reason}); "
                         "run the same command again to recompute it")


def _is_temporary(name: str) -> bool:
    """Whether ``name`` is a temporary file's (``_atomic_write``'s, the writability probe's)."""
    return name.startswith(".") and name.endswith(".tmp")


def _usable_directory(path: Path) -> None:
    """Create ``path`` if needed and check that files can be created in it (permission bits do
    not tell when running as root, or on read-only mounts), before any work."""
    try:
        if path.exists() and not path.is_dir():
            raise UsageError(f"--run-dir {path} is not a directory")
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--run-dir {path}: cannot create the directory ({exc.strerror or exc})") from None
    try:
        probe = tempfiles.create(path / "probe")
        os.unlink(probe.path)
        probe.release()
    except OSError as exc:
        raise UsageError(f"--run-dir {path} is not writable: creating a file in it failed "
                         f"({exc.strerror or exc})") from None


def _verify(path: Path, record: dict | None) -> str | None:
    """Why the part at ``path`` does not match ``record`` (length first, then SHA-256), or None."""
    if not record or "bytes" not in record or "sha256" not in record:
        return ("did not verify (no recorded checksum: stored by an older gamut, "
                "or by a run killed before it recorded one)")
    try:
        if path.stat().st_size != record["bytes"]:
            return "did not verify (truncated or changed)"
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        return f"could not be read ({exc.strerror or exc})"
    return None if digest.hexdigest() == record["sha256"] else "did not verify (truncated or changed)"


def _ranges(indices: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    out: list[str] = []
    for k in sorted(indices):
        if out and out[-1].split("-")[-1] == str(k - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{k}"
        else:
            out.append(str(k))
    return ", ".join(out)


def _flat(options: dict, prefix: str = "") -> dict:
    out: dict = {}
    for key, value in options.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all, flushed to disk before it replaces the old file (a
    resumed run must never find half a part); a signal that ends the run removes the temporary
    file. (:func:`gamut.io.atomic.atomic_output` does not sync: outputs need not survive a crash.)"""
    tmp = tempfiles.create(path)
    try:
        with temporary_file(tmp.path):
            try:
                with os.fdopen(os.dup(tmp.fd), "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp.path, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp.path)
                raise
    finally:
        tmp.release()


def computed_by_run(run_dir: str | os.PathLike) -> dict[int, list[int]]:
    """``{run number: [partitions it computed]}`` from a run directory's ``computed.log``."""
    out: dict[int, list[int]] = {}
    log = Path(run_dir) / "computed.log"
    if log.exists():
        for line in log.read_text().splitlines():
            run, index = line.split("\t")
            out.setdefault(int(run), []).append(int(index))
    return out
