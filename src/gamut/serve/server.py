"""The ``gamut serve`` process: start-up paid once, then commands run one after another.

Each command runs on the main thread exactly as :func:`gamut.cli.main` runs in its own process,
with the client's standard streams in place of this process's (``dup2`` onto descriptors 0-2, so
that compiled code and child processes see them too), its working directory, umask and
environment. Connections are accepted on a thread of their own and each is answered on another,
so a command never waits for another one: one that comes while a command runs is declined at
once and runs in its own process, as is one with other settings or other code. A signal passed on
by a client reaches the command as it would reach its own process: the command ends, removing its
partial outputs, and so does the server (see :mod:`gamut.io.interrupt`). The server ends itself
once its code is stale (:mod:`gamut.serve.fingerprint`); its log says why it ended, always.
"""
from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from gamut.errors import GamutError, UsageError
from gamut.io.interrupt import last_words
from gamut.scanning.pipeline.gpu_workers import kept_workers
from gamut.serve import lock, protocol, trust
from gamut.serve.fingerprint import Snapshot
from gamut.serve.protocol import listening

#: The one-pair scan that loads every stage's compiled code (a hit with an energy): hsa-let-7a-5p
#: against its reverse complement between flanks.
WARM_QUERY = "UGAGGUAGUAGGUUGUAUAGUU"
WARM_REFERENCE = "ACGUACGUAC" * 3 + "AACUAUACAACCUACUACCUCA" + "ACGUACGUAC" * 3

#: Signals a client may pass on (SIGHUP, a closed terminal, ends a command as SIGTERM does).
PASSED_ON = {signal.SIGINT: signal.SIGINT, signal.SIGTERM: signal.SIGTERM, signal.SIGHUP: signal.SIGTERM}
#: Signals that end the server between commands (SIGINT raises KeyboardInterrupt).
STOPPING = (signal.SIGTERM, signal.SIGHUP)
#: Seconds a client has to send its command once connected (each connection is answered on a
#: thread of its own, so a client that stalls delays no other).
ADMIT_TIMEOUT = 10.0


class Stopped(BaseException):
    """SIGTERM or SIGHUP reached the server between commands: it ends (removing its socket)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class ServerLog:
    """The server's log: its standard error as it started (the ``.log`` file beside the socket with
    ``--detach``), one line per event. While a command runs, descriptor 2 and ``sys.stderr`` are the
    command's, and other threads log too: the log writes to a copy of its own, whole lines at once."""

    def __init__(self) -> None:
        self._stream = open(os.dup(2), "w", encoding="utf-8", errors="backslashreplace", closefd=True)
        self._lock = threading.Lock()

    def __call__(self, message: str) -> None:
        with self._lock, contextlib.suppress(OSError, ValueError):
            self._stream.write(f"gamut serve: {message}\n")
            self._stream.flush()

    def error(self) -> None:
        """The traceback of the exception being handled."""
        with self._lock, contextlib.suppress(OSError, ValueError):
            self._stream.write(traceback.format_exc())
            self._stream.flush()


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


def _free_device_memory() -> None:
    """Give CuPy's cached device and pinned memory back between commands (an idle server keeps
    only its CUDA context)."""
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        with contextlib.suppress(Exception):
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()


def _watch_client(conn: socket.socket, done: threading.Event, log: Callable[[str], None]) -> None:
    """Pass the client's signals on to this process; the client gone mid-command ends it too."""
    while True:
        try:
            message, _ = protocol.receive(conn)
        except (OSError, ValueError):
            message = None
        if done.is_set():
            return
        if message is None:
            log("the client of the running command went away: it ends as on SIGTERM")
            os.kill(os.getpid(), signal.SIGTERM)
            return
        signum = PASSED_ON.get(message.get("signal"))
        if signum is not None:
            log(f"the client passed {signal.Signals(signum).name} on to the running command")
            os.kill(os.getpid(), signum)


class _Wakeup:
    """What the main thread waits on between commands: a byte written here (a command handed
    over, the server ending), or a signal. Python runs signal handlers in the main thread only,
    and a signal the kernel gave another thread does not end the main thread's wait on a lock; as
    the signal module's wakeup descriptor, this pipe gets a byte whichever thread the signal hit."""

    def __enter__(self) -> _Wakeup:
        self.read, self.write = os.pipe()
        os.set_blocking(self.read, False)
        os.set_blocking(self.write, False)
        self.previous = signal.set_wakeup_fd(self.write, warn_on_full_buffer=False)
        return self

    def __exit__(self, *exc) -> None:
        signal.set_wakeup_fd(self.previous)
        os.close(self.read)
        os.close(self.write)

    def poke(self) -> None:
        with contextlib.suppress(OSError):  # full: a wakeup is pending anyway
            os.write(self.write, b"\0")

    def wait(self, timeout: float | None) -> None:
        """Until a byte comes (or ``timeout`` seconds pass); a signal's handler runs on return."""
        select.select([self.read], [], [], timeout)
        with contextlib.suppress(OSError):
            while os.read(self.read, 4096):
                pass


class Server:
    """Serves commands on a listening socket until ``idle_timeout`` seconds pass without one
    (0: never), a client asks it to stop, its code is stale, or SIGINT/SIGTERM/SIGHUP.

    Commands run on the main thread, one at a time; the accepting thread and one thread per
    connection answer the rest at once: status and stop requests, and commands declined (the
    server busy, ending, or with other settings or code than the command's)."""

    def __init__(self, path: Path, idle_timeout: float, log: Callable[[str], None],
                 devices: Sequence[str] = (), code: Snapshot | None = None) -> None:
        self.path = path
        self.idle_timeout = idle_timeout
        self.log = log
        self.devices = list(devices)
        self.code = code or Snapshot.take()
        self.settled = protocol.settled_environment()  # os.environ is each command's while it runs
        self.began = time.time()
        self.commands = 0
        self._lock = threading.Lock()
        self._busy = False  # a command handed to the main thread and not yet finished
        self._ending: str | None = None  # why the server ends, once it does: nothing more is taken
        self._handed: queue.SimpleQueue = queue.SimpleQueue()  # (conn, message, fds), or None: end
        self._wakeup: _Wakeup | None = None  # while serving

    def status(self) -> dict[str, Any]:
        """What ``gamut serve --status`` prints."""
        return {"pid": os.getpid(), "socket": str(self.path), "devices": self.devices,
                "up_s": round(time.time() - self.began, 1), "commands": self.commands,
                "idle_timeout_s": self.idle_timeout, "busy": self._busy}

    def serve(self, listener: socket.socket) -> str:
        """Serve until the server ends; why it ended, in words."""
        with _Wakeup() as self._wakeup:
            acceptor = threading.Thread(target=self._accept, args=(listener,), name="gamut-serve-accept",
                                        daemon=True)
            acceptor.start()
            try:
                return self._run_handed()
            finally:
                self._end("stopped")  # (if nothing else said why first) nothing more is taken
                with contextlib.suppress(OSError):
                    listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
                acceptor.join(timeout=5)
                self._wakeup = None

    def _run_handed(self) -> str:
        """Run the commands handed over, until the server ends."""
        idle_since = time.monotonic()
        while True:
            try:
                handed = self._handed.get_nowait()
            except queue.Empty:
                left = self.idle_timeout - (time.monotonic() - idle_since) if self.idle_timeout else None
                if left is not None and left <= 0:
                    with self._lock:
                        if self._busy:  # a command was handed over as the wait ended
                            continue
                        if self._ending is None:
                            self._ending = f"idle for {self.idle_timeout:g} s"
                        return self._ending
                self._wakeup.wait(left)
                continue
            if handed is None:
                return str(self._ending)
            try:
                self._run(*handed)
            finally:
                with self._lock:
                    self._busy = False
                    ending = self._ending
            if ending is not None:
                return ending
            idle_since = time.monotonic()

    def _hand(self, handed: tuple | None) -> None:
        """Give the main thread a command (None: the end); called with ``_lock`` held."""
        self._handed.put(handed)
        if self._wakeup is not None:
            self._wakeup.poke()

    def _end(self, why: str) -> None:
        """End the server once the running command (if any) is done; nothing more is taken."""
        with self._lock:
            if self._ending is None:
                self._ending = why
                if not self._busy:
                    self._hand(None)

    def _accept(self, listener: socket.socket) -> None:
        """Take connections, each answered on a thread of its own, until the listener is shut down
        (the server ending) or fails. Nothing escapes this thread: a server that ended before the
        thread first ran (its listener already closed: a signal at once, on a busy machine) or
        while it took a last connection (no new threads once the interpreter ends) ends quietly,
        its log's last line the reason the main thread gives."""
        try:
            listener.settimeout(None)
            while True:
                conn, _ = listener.accept()
                try:
                    threading.Thread(target=self._admit, args=(conn,), name="gamut-serve-admit", daemon=True).start()
                except RuntimeError:  # the interpreter is ending: no new threads
                    conn.close()
                    return
        except OSError as exc:  # shut down as the server ends; else an error (no descriptor left?)
            self._end(f"accepting connections failed: {exc}")

    def _admit(self, conn: socket.socket) -> None:
        """Answer one connection, or hand its command to the main thread."""
        fds: list[int] = []
        handed = False
        try:
            if trust.peer_uid(conn) != os.getuid():
                return
            conn.settimeout(ADMIT_TIMEOUT)
            message, fds = protocol.receive(conn, max_fds=3)
            conn.settimeout(None)
            if message is not None:
                handed = self._answer(conn, message, fds)
        except (OSError, ValueError, trust.Untrusted):
            pass
        finally:
            if not handed:
                for fd in fds:
                    os.close(fd)
                conn.close()

    def _answer(self, conn: socket.socket, message: dict[str, Any], fds: list[int]) -> bool:
        """Reply to ``message``; True where its command was handed to the main thread instead."""
        if message.get("status"):
            protocol.send(conn, {"status_of_server": self.status()})
            return False
        if message.get("stop"):  # the reply first: the process may end as soon as it is told to
            try:
                protocol.send(conn, {"stopped": True, "after_command": self._busy})
            finally:
                self._end("stopped by 'gamut serve --stop'")
            return False
        if "run" not in message or len(fds) != 3:
            return False
        reply = self._refusal(message)
        if reply is not None and "code_changed" in reply:
            try:
                protocol.send(conn, reply)
            finally:
                self._end(f"gamut's code changed since it started ({reply['code_changed']})")
            return False
        if reply is None:
            with self._lock:
                if self._ending is not None:
                    reply = {"declined": "the server is ending"}
                elif self._busy:
                    reply = {"declined": "busy with another command"}
                else:
                    self._busy = True
                    self._hand((conn, message, fds))
                    return True
        protocol.send(conn, reply)
        return False

    def _refusal(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Why the server must not run the command of ``message`` (a reply), if it must not; with
        ``code_changed`` where this server's own code has changed since it started (it must end)."""
        if message.get("settled") != self.settled:
            return {"declined": "the command's environment differs from the server's"}
        if message.get("code") == self.code.digest:
            return None
        change = self.code.change(Snapshot.take(self.code.package))
        if change is None:  # the command's gamut is another one (another GAMUT_SERVER user)
            return {"declined": "the command runs other code than the server"}
        return {"declined": "the server's code is stale", "code_changed": change}

    def _run(self, conn: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
        try:
            try:
                protocol.send(conn, {"started": True})
            except OSError:  # the client has gone before its command started
                return
            done = threading.Event()
            watcher = threading.Thread(target=_watch_client, args=(conn, done, self.log), name="gamut-serve-client",
                                       daemon=True)
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
        finally:
            for fd in fds:
                os.close(fd)
            conn.close()


def bind(path: Path) -> socket.socket:
    """A listening socket at ``path`` (a stale socket there is replaced; a live one is an error)."""
    if path.exists() or path.is_symlink():
        if listening(path):
            raise UsageError(protocol.already(path, None))
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


def _stop(signum: int, frame) -> None:
    raise Stopped(signum)


@contextlib.contextmanager
def _stopping_signals() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise :class:`Stopped` (between commands; a running command
    has its own handlers)."""
    previous = {sig: signal.signal(sig, _stop) for sig in STOPPING}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def take_lock(path: Path, server: bool = True) -> int:
    """The server lock of ``path`` (:mod:`gamut.serve.lock`; ``server``: taken by the server
    itself), or a one-line UsageError naming the server that holds it."""
    try:
        return lock.take(path, server)
    except lock.Held as held:
        raise UsageError(protocol.already(path, held.pid or lock.wait_holder(path, 2.0))) from None


def serve(path: Path, devices: Sequence[str], idle_timeout: float, lock_fd: int | None = None,
          code: Snapshot | None = None) -> None:
    """Warm up on ``devices``, then serve commands on ``path`` (in a directory that
    :func:`gamut.serve.trust.prepare_directory` checked; see :class:`Server`) until the server
    ends; the log (this process's standard error) says why it ended. ``lock_fd``: the server lock,
    if the caller has taken it (else it is taken here); it is held until the end. ``code``: the
    package's files as this process began to import them (else as they are now)."""
    code = code or Snapshot.take()
    if lock_fd is None:
        lock_fd = take_lock(path)
    log = ServerLog()
    why = "an error (its traceback is above)"
    try:
        with _stopping_signals(), last_words(lambda signum: log(
                f"ended: {signal.Signals(signum).name} ended the command it was running (a command's threads "
                "may be inside compiled code: the server ends with it)")):
            why = _serve(path, devices, idle_timeout, log, code)
    except (Stopped, KeyboardInterrupt) as exc:
        why = f"stopped by {signal.Signals(getattr(exc, 'signum', signal.SIGINT)).name}"
    except GamutError:
        why = "the error below"
        raise
    except BaseException:
        log.error()
        raise
    finally:
        log(f"ended: {why}")
        os.close(lock_fd)


def _serve(path: Path, devices: Sequence[str], idle_timeout: float, log: ServerLog, code: Snapshot) -> str:
    from gamut.io.heap import reuse_large_buffers

    reuse_large_buffers()
    began = time.perf_counter()
    if listening(path):  # before the warm-up (bind checks again after it)
        raise UsageError(protocol.already(path, None))
    warm(devices)
    listener = bind(path)
    inode = path.stat().st_ino
    try:
        idle = f"{idle_timeout:g} s idle" if idle_timeout else "'gamut serve --stop'"
        log(f"ready on {path} (pid {os.getpid()}, warmed up on {', '.join(devices) or 'nothing'} in "
            f"{time.perf_counter() - began:.1f} s; ends after {idle})")
        own, streams = tuple(os.dup(k) for k in range(3)), (sys.stdin, sys.stdout, sys.stderr)
        # A scan's GPU worker processes (and multiprocessing's resource tracker, started with the
        # first) stay for the next command on those GPUs, holding the server's streams.
        with kept_workers(lambda: _standard_streams(own, streams)):
            return Server(path, idle_timeout, log, devices, code).serve(listener)
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if path.stat().st_ino == inode:
                path.unlink()
