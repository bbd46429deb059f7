"""A ``gamut`` command never hands anything to a server socket another user could have made or
listens on (issue 44): it checks the socket's directory (this user's, private), the socket (this
user's) and the listening process (``SO_PEERCRED``: this user) before the first byte, runs in its
own process where one check fails, and says why in one line. ``gamut serve`` never uses a
directory someone else made. Tests acting as another user (uid 65534) need root, as in CI."""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gamut.serve import protocol, trust
from gamut.serve.client import run_served

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
#: Another user (``nobody``).
OTHER = 65534
as_root = pytest.mark.skipif(os.getuid() != 0, reason="acting as another user needs root (CI runs tests as root)")


def _env(**variables: str) -> dict[str, str]:
    """This environment without GAMUT_SERVER (the default socket), with ``variables``."""
    env = {k: v for k, v in os.environ.items() if k != "GAMUT_SERVER"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    return {**env, **variables}


def _gamut(args: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gamut", *args], env=env, cwd=cwd, capture_output=True, timeout=300)


def _notes(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode().splitlines() if line.startswith("gamut: note:")]


@contextlib.contextmanager
def _shared_base(mode: int) -> Iterator[Path]:
    """A directory outside the tests' private temporary tree (another user can reach it), with ``mode``
    (0o1777: like /tmp)."""
    base = Path(tempfile.mkdtemp(prefix="gamut-trust-"))
    try:
        base.chmod(mode)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


class ForeignServer:
    """A process of another user listening on ``sock`` (in a directory it makes itself with
    ``directory_mode`` when given): it records how many bytes each connection sent (:meth:`stop`)."""

    def __init__(self, sock: Path, directory_mode: int | None = None, uid: int = OTHER) -> None:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: become the other user, listen, record
            status = 1
            try:
                os.close(read_end)
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                if directory_mode is not None:
                    os.mkdir(sock.parent, directory_mode)
                    os.chmod(sock.parent, directory_mode)
                listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                listener.bind(str(sock))
                os.chmod(sock, 0o777)
                listener.listen(8)
                os.write(write_end, b"ready\n")
                while True:
                    conn, _ = listener.accept()
                    conn.settimeout(5)
                    size = 0
                    with contextlib.suppress(OSError):
                        while data := conn.recv(1 << 16):
                            size += len(data)
                    conn.close()
                    os.write(write_end, f"{size}\n".encode())
            except BaseException as exc:  # noqa: BLE001 (said to the parent)
                with contextlib.suppress(OSError):
                    os.write(write_end, f"error {exc!r}\n".encode())
            finally:
                os._exit(status)
        os.close(write_end)
        self.pid = pid
        self.reader = os.fdopen(read_end, "r")
        first = self.reader.readline().strip()
        if first != "ready":
            self.stop()
            raise RuntimeError(f"the other user's server did not start: {first}")

    def stop(self) -> list[int]:
        """The bytes each connection sent, in order (the process ended first)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)
        lines = self.reader.read().split()
        self.reader.close()
        return [int(n) for n in lines]


class OwnListener:
    """A listening socket of this user's (this process) at ``sock``, answering on a thread: it
    counts the connections, records each client's message and declines its command (so that a
    client that wrongly trusts it returns at once, and a test fails rather than hangs)."""

    def __init__(self, sock: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(sock))
        self.sock.listen(8)
        self.connections = 0
        self.messages: list[dict] = []
        self.thread = threading.Thread(target=self._answer, daemon=True)
        self.thread.start()

    def _answer(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            self.connections += 1
            with conn:
                conn.settimeout(30)
                message, fds = protocol.receive(conn, max_fds=3)
                for fd in fds:
                    os.close(fd)
                if message is not None:
                    self.messages.append(message)
                    protocol.send(conn, {"declined": "a test"})

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join(timeout=30)


def _miranda(cwd: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, bytes]:
    done = _gamut(["miranda", str(EXAMPLES / "mirnas.fa"), str(EXAMPLES / "targets.fa"), "-out", "hits.txt"],
                  env, cwd=cwd)
    out = cwd / "hits.txt"
    return done, out.read_bytes() if out.exists() else b""


# --------------------------------------------------------------------------- another user's socket

@as_root
def test_a_socket_another_user_made_first_is_never_used(tmp_path):
    """Without XDG_RUNTIME_DIR-like privacy: another user makes the default directory (under a
    shared, sticky base) and listens there first. The command runs in its own process with the
    right output, says why once, and the other user's process receives no connection at all; the
    victim's own `gamut serve` is refused with one line that says what to do."""
    with _shared_base(0o1777) as base:
        sock = protocol.socket_path({"XDG_RUNTIME_DIR": str(base)})
        foreign = ForeignServer(sock, directory_mode=0o755)
        try:
            env = _env(XDG_RUNTIME_DIR=str(base))
            (tmp_path / "victim").mkdir()
            (tmp_path / "own").mkdir()
            done, hits = _miranda(tmp_path / "victim", env)
            own, own_hits = _miranda(tmp_path / "own", _env(GAMUT_SERVER="off"))
            assert done.returncode == own.returncode == 0, done.stderr.decode()
            assert hits == own_hits and b"Scores for this hit" in hits
            assert _notes(done.stderr) == [
                f"gamut: note: not using the server socket {sock}: its directory {sock.parent} is owned by uid "
                f"{OTHER}, not by you (uid 0); running this command in its own process"]
            assert done.stdout == own.stdout

            served = _gamut(["serve", "--device", "cpu"], env)
            message = served.stderr.decode()
            assert served.returncode == 1 and len(message.splitlines()) == 1, message
            assert f"owned by uid {OTHER}" in message and "XDG_RUNTIME_DIR" in message
            assert "writing standard output" not in message
            for flag in ("--status", "--stop"):
                asked = _gamut(["serve", flag], env)
                assert asked.returncode == 1 and b"not using" in asked.stderr
        finally:
            received = foreign.stop()
    assert received == []  # not even a connection


@as_root
def test_a_socket_whose_listener_is_another_user_is_refused_even_in_a_private_directory(tmp_path):
    """The directory (mode 0700) and the socket file are this user's, but the process listening is
    another user's: the command connects, reads SO_PEERCRED, and sends nothing."""
    with _shared_base(0o1777) as base:
        sock = protocol.socket_path({"XDG_RUNTIME_DIR": str(base)})
        foreign = ForeignServer(sock, directory_mode=0o755)
        try:
            os.chown(sock.parent, 0, 0)
            os.chmod(sock.parent, 0o700)
            os.chown(sock, 0, 0)
            env = _env(XDG_RUNTIME_DIR=str(base))
            done, hits = _miranda(tmp_path, env)
            assert done.returncode == 0 and b"Scores for this hit" in hits, done.stderr.decode()
            assert _notes(done.stderr) == [
                f"gamut: note: not using the server socket {sock}: the process listening on it runs as uid "
                f"{OTHER}, not as you (uid 0); running this command in its own process"]
            status = _gamut(["serve", "--status"], env)
            assert status.returncode == 1 and b"runs as uid" in status.stderr
        finally:
            received = foreign.stop()
    assert received == [0, 0]  # the command's and --status's connections, with nothing sent on either


@as_root
def test_a_named_socket_in_another_users_directory_is_refused(tmp_path):
    """GAMUT_SERVER names a socket in a directory another user owns: nothing connects."""
    with _shared_base(0o1777) as base:
        sock = base / "theirs" / "serve.sock"
        foreign = ForeignServer(sock, directory_mode=0o700)
        try:
            done, hits = _miranda(tmp_path, _env(GAMUT_SERVER=str(sock)))
            assert done.returncode == 0 and b"Scores for this hit" in hits, done.stderr.decode()
            assert _notes(done.stderr) == [
                f"gamut: note: not using the server socket {sock}: its directory {sock.parent} is owned by uid "
                f"{OTHER}, not by you (uid 0); running this command in its own process"]
            served = _gamut(["serve", "--device", "cpu"], _env(GAMUT_SERVER=str(sock)))
            assert served.returncode == 1 and f"owned by uid {OTHER}".encode() in served.stderr
        finally:
            received = foreign.stop()
    assert received == []


@as_root
def test_a_socket_file_of_another_user_is_refused(tmp_path, capsys):
    """In this user's private directory, a socket file another user owns (one who could once write
    there) is not connected to."""
    directory = tmp_path / "private"
    directory.mkdir(mode=0o700)
    sock = directory / "serve.sock"
    listener = OwnListener(sock)
    try:
        os.chown(sock, OTHER, OTHER)
        assert run_served(["--version"], {"GAMUT_SERVER": str(sock)}) is None
    finally:
        listener.close()
    assert listener.connections == 0
    assert _notes(capsys.readouterr().err.encode()) == [
        f"gamut: note: not using the server socket {sock}: it is owned by uid {OTHER}, not by you (uid 0); "
        "running this command in its own process"]


# --------------------------------------------------------------------------- this user's own directories

@pytest.mark.parametrize("mode", [0o755, 0o750, 0o710], ids=oct)
def test_a_default_directory_others_may_enter_is_refused(tmp_path, capsys, mode):
    """The default directory must be mode 0700: one that group or others may enter or list (made by
    an older gamut, or by hand) is not used, though it and its socket are this user's."""
    directory = tmp_path / f"gamut-{os.getuid()}"
    directory.mkdir()
    directory.chmod(mode)
    sock = protocol.socket_path({"XDG_RUNTIME_DIR": str(tmp_path)})
    listener = OwnListener(sock)
    try:
        assert run_served(["--version"], {"XDG_RUNTIME_DIR": str(tmp_path)}) is None
    finally:
        listener.close()
    assert listener.connections == 0
    assert _notes(capsys.readouterr().err.encode()) == [
        f"gamut: note: not using the server socket {sock}: its directory {directory} has mode {mode:04o}, not "
        "0700; running this command in its own process"]
    with pytest.raises(trust.Untrusted, match=f"mode {mode:04o}, not 0700"):
        trust.prepare_directory(sock, named=False)


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o775], ids=oct)
def test_a_named_socket_in_a_directory_others_may_write_is_refused(tmp_path, capsys, mode):
    directory = tmp_path / "shared"
    directory.mkdir()
    directory.chmod(mode)
    sock = directory / "serve.sock"
    listener = OwnListener(sock)
    try:
        assert run_served(["--version"], {"GAMUT_SERVER": str(sock)}) is None
    finally:
        listener.close()
    assert listener.connections == 0
    assert _notes(capsys.readouterr().err.encode()) == [
        f"gamut: note: not using the server socket {sock}: its directory {directory} is writable by others "
        f"(mode {mode:04o}); running this command in its own process"]
    with pytest.raises(trust.Untrusted, match="writable by others"):
        trust.prepare_directory(sock, named=True)


def test_a_symbolic_link_as_the_default_directory_is_refused(tmp_path, capsys):
    """`gamut-UID` a symbolic link (to a private directory of this user's, even): not followed."""
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    link = tmp_path / f"gamut-{os.getuid()}"
    link.symlink_to(target)
    sock = protocol.socket_path({"XDG_RUNTIME_DIR": str(tmp_path)})
    listener = OwnListener(target / sock.name)
    try:
        assert run_served(["--version"], {"XDG_RUNTIME_DIR": str(tmp_path)}) is None
    finally:
        listener.close()
    assert listener.connections == 0
    assert f"its directory {link} is a symbolic link" in capsys.readouterr().err
    with pytest.raises(trust.Untrusted, match="symbolic link"):
        trust.prepare_directory(sock, named=False)


@pytest.mark.parametrize("named", [False, True])
def test_a_private_directory_of_this_users_is_used(tmp_path, capsys, named):
    """The checks let this user's own socket through (so the refusals above are not vacuous): the
    default directory at mode 0700, a named one at 0755 (others may read, not write), reached
    through a symbolic link to it."""
    if named:
        real = tmp_path / "real"
        real.mkdir(mode=0o755)
        real.chmod(0o755)
        (tmp_path / "link").symlink_to(real)
        environ = {"GAMUT_SERVER": str(tmp_path / "link" / "serve.sock")}
        listened = real / "serve.sock"
    else:
        environ = {"XDG_RUNTIME_DIR": str(tmp_path)}
        listened = trust.prepare_directory(protocol.socket_path(environ), named=False)
        assert stat.S_IMODE(listened.parent.stat().st_mode) == 0o700
    assert trust.prepare_directory(protocol.socket_path(environ), named=named) == listened
    listener = OwnListener(listened)
    try:
        assert run_served(["--version"], environ) is None  # declined by the test's listener
    finally:
        listener.close()
    assert listener.connections == 1 and [m["run"] for m in listener.messages] == [["--version"]]
    assert "code" in listener.messages[0]
    assert capsys.readouterr().err == ""


def test_no_socket_is_silent(tmp_path, capsys):
    """Where no server was started (the usual case) nothing is said, whatever the directory."""
    assert run_served(["--version"], {"XDG_RUNTIME_DIR": str(tmp_path)}) is None
    assert run_served(["--version"], {"GAMUT_SERVER": str(tmp_path / "no" / "such.sock")}) is None
    assert capsys.readouterr().err == ""
