"""The ``gamut serve`` process: start-up paid once, then commands run one after another.

Each command runs on the main thread exactly as :func:`gamut.cli.main` runs in its own process,
with the client's standard streams in place of this process's (``dup2`` onto descriptors 0-2, so
that compiled code and child processes see them too), its working directory, umask and
environment. Commands run one at a time: a second client waits in the listen queue. A signal
passed on by a client reaches the command as it would reach its own process: the command ends,
removing its partial outputs, and so does the server (see :mod:`gamut.io.interrupt`).
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from gamut.errors import UsageError
from gamut.scanning.pipeline.gpu_workers import kept_workers
from gamut.serve import protocol

#: The one-pair scan that loads every stage's compiled code (a hit with an energy): hsa-let-7a-5p
#: against its reverse complement between flanks.
WARM_QUERY = "UGAGGUAGUAGGUUGUAUAGUU"
WARM_REFERENCE = "ACGUACGUAC" * 3 + "AACUAUACAACCUACUACCUCA" + "ACGUACGUAC" * 3

#: Signals a client may pass on (SIGHUP, a closed terminal, ends a command as SIGTERM does).
PASSED_ON = {signal.SIGINT: signal.SIGINT, signal.SIGTERM: signal.SIGTERM, signal.SIGHUP: signal.SIGTERM}


ALREADY = "gamut serve: a server already listens on {path} (stop it with 'gamut serve --stop')"


class Stopped(BaseException):
    """SIGTERM reached the server between commands: it ends (removing its socket)."""


def _exit_status(code: Any) -> int:
    """The status ``SystemExit(code)`` gives a process (printing a message code, as Python does)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _streams_on(fds: Sequence[int]) -> tuple[TextIO, TextIO, TextIO]:
    """Fresh ``sys.stdin``/``stdout``/``stderr`` on copies of ``fds``, buffered as Python's own
    (copies: text a closed pipe left in a buffer can never reach the server's own streams)."""
    encoding = sys.stdout.encoding or "utf-8"
    stdin = open(os.dup(fds[0]), "r", encoding=encoding)
    stdout = open(os.dup(fds[1]), "w", buffering=1 if os.isatty(fds[1]) else -1, encoding=encoding)
    stderr = open(os.dup(fds[2]), "w", buffering=1, encoding=encoding, errors="backslashreplace")
    return stdin, stdout, stderr


@contextlib.contextmanager
def _streams_of(fds: Sequence[int]) -> Iterator[None]:
    """Descriptors 0-2 are ``fds`` while inside (for processes started there), then what they were."""
    current = [os.dup(k) for k in range(3)]
    try:
        for k, fd in enumerate(fds):
            os.dup2(fd, k)
        yield
    finally:
        for k, fd in enumerate(current):
            os.dup2(fd, k)
            os.close(fd)


@contextlib.contextmanager
def _standard_streams(fds: Sequence[int], streams: tuple[TextIO, TextIO, TextIO]) -> Iterator[None]:
    """Descriptors 0-2 are ``fds`` and Python's standard streams are ``streams`` while inside, then
    what they were. A process started inside holds them, including a descriptor passed on by
    number (multiprocessing's resource tracker gets ``sys.stderr``'s): one that outlives a command
    must be started with the server's own, not the command's (a reader of the command's output
    waits for every writer to close it)."""
    saved = (sys.stdin, sys.stdout, sys.stderr)
    with _streams_of(fds):
        sys.stdin, sys.stdout, sys.stderr = streams
        try:
            yield
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def _as_client(fds: Sequence[int], cwd: str, umask: int, environ: dict[str, str]) -> Iterator[None]:
    """This process with the client's streams, directory, umask and environment; restored after."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    client = _streams_on(fds)
    saved_environ, saved_argv = dict(os.environ), sys.argv
    saved_cwd, saved_umask = os.getcwd(), os.umask(umask)
    try:
        with _standard_streams(fds, client):
            os.environ.clear()
            os.environ.update(environ)
            os.chdir(cwd)
            yield
    finally:
        for stream in client:
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
            with contextlib.suppress(OSError, ValueError):
                stream.close()
        os.environ.clear()
        os.environ.update(saved_environ)
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.umask(saved_umask)


def run_command(argv: Sequence[str], cwd: str, umask: int, environ: dict[str, str], fds: Sequence[int]) -> int:
    """``gamut argv`` as its own process would run it, with the client's streams (``fds``),
    directory, umask and environment; its exit status."""
    from gamut import cli

    environ = {**environ, "GAMUT_SERVER": "off"}  # a gamut the command starts must not wait for this one
    try:
        with _as_client(fds, cwd, umask, environ):
            sys.argv = ["gamut", *argv]
            try:
                code = cli.main(list(argv))
            except SystemExit as exc:  # --help, --version, argparse's errors
                code = _exit_status(exc.code)
            except KeyboardInterrupt:  # outside the command's own signal handling
                print("gamut: interrupted", file=sys.stderr)
                code = 130
            except Exception:  # noqa: BLE001 (what Python prints for an uncaught error, and status 1)
                traceback.print_exc()
                code = 1
            return cli.flush_streams(code)
    except OSError as exc:  # the client's directory is gone, or a stream cannot be used
        print(f"gamut serve: cannot run a command in {cwd}: {exc.strerror or exc}", file=sys.stderr)
        return 1


def _warm_inputs(directory: Path) -> tuple[Path, Path]:
    query, reference = directory / "warm_q.fa", directory / "warm_r.fa"
    query.write_text(f">warm-query\n{WARM_QUERY}\n")
    reference.write_text(f">warm-reference\n{WARM_REFERENCE}\n")
    return query, reference


def warm(devices: Sequence[str]) -> None:
    """Run the one-pair scan on each device, so that every stage's compiled code is loaded (its
    messages, such as a first run's compiling notice or an error, on this process's stderr)."""
    with tempfile.TemporaryDirectory(prefix="gamut-serve-") as tmp:
        query, reference = _warm_inputs(Path(tmp))
        fd = os.open(os.devnull, os.O_RDWR)
        try:
            for device in devices:
                out = Path(tmp) / f"warm_{device}.txt"
                argv = ["miranda", str(query), str(reference), "--device", device, "-out", str(out)]
                status = run_command(argv, tmp, protocol.current_umask(), dict(os.environ), (fd, fd, 2))
                if status != 0 or "Scores for this hit" not in out.read_text():
                    raise UsageError(f"gamut serve: the warm-up scan on {device} failed (status {status}; "
                                     "its messages are above)")
        finally:
            os.close(fd)


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def _free_device_memory() -> None:
    """Give CuPy's cached device and pinned memory back between commands (an idle server keeps
    only its CUDA context)."""
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        with contextlib.suppress(Exception):
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()


def _watch_client(conn: socket.socket, done: threading.Event) -> None:
    """Pass the client's signals on to this process; the client gone mid-command ends it too."""
    while True:
        try:
            message, _ = protocol.receive(conn)
        except (OSError, ValueError):
            message = None
        if done.is_set():
            return
        if message is None:
            os.kill(os.getpid(), signal.SIGTERM)
            return
        signum = PASSED_ON.get(message.get("signal"))
        if signum is not None:
            os.kill(os.getpid(), signum)


class Server:
    """Serves commands on ``path`` until ``idle_timeout`` seconds pass without one (0: never),
    a client asks it to stop, or SIGINT/SIGTERM."""

    def __init__(self, path: Path, idle_timeout: float, log: Callable[[str], None],
                 devices: Sequence[str] = ()) -> None:
        self.path = path
        self.idle_timeout = idle_timeout
        self.log = log
        self.devices = list(devices)
        self.began = time.time()
        self.commands = 0

    def status(self) -> dict[str, Any]:
        """What ``gamut serve --status`` prints."""
        return {"pid": os.getpid(), "socket": str(self.path), "devices": self.devices,
                "up_s": round(time.time() - self.began, 1), "commands": self.commands,
                "idle_timeout_s": self.idle_timeout}

    def serve(self, listener: socket.socket) -> None:
        previous = signal.signal(signal.SIGTERM, self._stop)
        try:
            while True:
                listener.settimeout(self.idle_timeout or None)
                try:
                    conn, _ = listener.accept()
                except socket.timeout:
                    self.log(f"idle for {self.idle_timeout:g} s: ending")
                    return
                with conn:
                    conn.settimeout(None)
                    if not self.handle(conn):
                        return
        except (Stopped, KeyboardInterrupt):
            self.log("stopped by a signal")
        finally:
            signal.signal(signal.SIGTERM, previous)

    @staticmethod
    def _stop(signum, frame) -> None:
        raise Stopped()

    def handle(self, conn: socket.socket) -> bool:
        """Serve one connection; False once a client asked the server to stop."""
        if _peer_uid(conn) != os.getuid():
            return True
        try:
            message, fds = protocol.receive(conn, max_fds=3)
        except (OSError, ValueError):
            return True
        try:
            if message is None:
                return True
            if message.get("status"):
                protocol.send(conn, {"status_of_server": self.status()})
                return True
            if message.get("stop"):
                protocol.send(conn, {"stopped": True})
                self.log("stopped by 'gamut serve --stop'")
                return False
            if "run" not in message or len(fds) != 3:
                return True
            if message.get("settled") != protocol.settled_environment():
                protocol.send(conn, {"declined": "the command's environment differs from the server's"})
                return True
            try:
                protocol.send(conn, {"started": True})
            except OSError:  # the client has gone while it waited for its turn
                return True
            self._run(conn, message, fds)
            return True
        finally:
            for fd in fds:
                os.close(fd)

    def _run(self, conn: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
        done = threading.Event()
        watcher = threading.Thread(target=_watch_client, args=(conn, done), name="gamut-serve-client", daemon=True)
        watcher.start()
        began = time.perf_counter()
        self.commands += 1
        argv = [str(a) for a in message["run"]]
        status = run_command(argv, str(message["cwd"]), int(message["umask"]), dict(message["environ"]), fds)
        done.set()
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RD)
        watcher.join()
        with contextlib.suppress(OSError):
            protocol.send(conn, {"status": status})
        self.log(f"gamut {' '.join(argv[:1])} ... : status {status} in {time.perf_counter() - began:.2f} s")
        _free_device_memory()


def listening(path: Path) -> bool:
    """Whether a server answers on ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def bind(path: Path) -> socket.socket:
    """A listening socket at ``path`` (a stale socket there is replaced; a live one is an error)."""
    if path.exists() or path.is_symlink():
        if listening(path):
            raise UsageError(ALREADY.format(path=path))
        if not path.is_socket():
            raise UsageError(f"gamut serve: {path} exists and is not a socket")
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(str(path))
        listener.listen(64)
    except OSError as exc:
        listener.close()
        raise UsageError(f"gamut serve: cannot listen on {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old)
    return listener


def serve(path: Path, devices: Sequence[str], idle_timeout: float, log: Callable[[str], None]) -> None:
    """Warm up on ``devices``, then serve commands on ``path`` (see :class:`Server`)."""
    from gamut.io.heap import reuse_large_buffers

    reuse_large_buffers()
    began = time.perf_counter()
    if listening(path):  # before the warm-up (bind checks again after it)
        raise UsageError(ALREADY.format(path=path))
    warm(devices)
    listener = bind(path)
    inode = path.stat().st_ino
    try:
        idle = f"{idle_timeout:g} s idle" if idle_timeout else "'gamut serve --stop'"
        log(f"ready on {path} (pid {os.getpid()}, warmed up on {', '.join(devices)} in "
            f"{time.perf_counter() - began:.1f} s; ends after {idle})")
        own, streams = tuple(os.dup(k) for k in range(3)), (sys.stdin, sys.stdout, sys.stderr)
        # A scan's GPU worker processes (and multiprocessing's resource tracker, started with the
        # first) stay for the next command on those GPUs, holding the server's streams.
        with kept_workers(lambda: _standard_streams(own, streams)):
            Server(path, idle_timeout, log, devices).serve(listener)
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if path.stat().st_ino == inode:
                path.unlink()
