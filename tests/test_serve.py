"""``gamut serve``: commands run by a warm server give the outputs, messages and exit statuses of
their own processes; anything the server cannot take runs in the command's own process."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gamut.serve import protocol, trust
from gamut.serve.client import run_served
from gamut.serve.fingerprint import Snapshot
from gamut.serve.protocol import listening
from gamut.serve.server import Server
from signal_helpers import random_letters, signal_running_scan, write_fasta

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _env(sock: Path | str, **extra: str) -> dict[str, str]:
    return dict(os.environ, GAMUT_SERVER=str(sock),
                PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]), **extra)


def gamut(args: list[str], sock: Path | str, cwd: Path | None = None, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gamut", *args], env=_env(sock, **extra), cwd=cwd,
                          capture_output=True, timeout=300)


def served_count(log: Path) -> int:
    """Commands the server has run (one log line each)."""
    return sum(": status " in line for line in log.read_text().splitlines())


def server_status(sock: Path) -> dict:
    """What the server on ``sock`` says of itself (``gamut serve --status``, in this process)."""
    with trust.connect(sock, named=True) as conn:
        protocol.send(conn, {"status": True})
        return protocol.receive(conn)[0]["status_of_server"]


def wait_until(condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not {what} after {timeout:g} s"
        time.sleep(0.05)


#: A server warmed up on nothing (no compiled code loaded: it starts in a fraction of a second);
#: arguments: socket, idle timeout.
BARE_SERVER = ("import sys; from pathlib import Path; from gamut.serve.server import serve; "
               "serve(Path(sys.argv[1]), [], float(sys.argv[2]))")


def _sigint_default() -> None:
    """SIGINT at its default in the child, as a terminal starts a server: a job a shell started in
    the background (a CI run started with '&') inherits it ignored, and Python then leaves it so."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def bare_server(sock: Path, env: dict[str, str], idle_timeout: float = 600.0, script: str = BARE_SERVER
                ) -> subprocess.Popen:
    """A server process on ``sock`` logging to ``sock``'s .log; returns once it listens."""
    with open(sock.with_suffix(".log"), "ab") as log:
        proc = subprocess.Popen([sys.executable, "-c", script, str(sock), str(idle_timeout)], env=env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, preexec_fn=_sigint_default)
    wait_until(lambda: listening(sock) or proc.poll() is not None, "listening")
    return proc


def ended(proc: subprocess.Popen, log: Path) -> str:
    """The reason the server process gave for its end (it has ended within a minute)."""
    proc.wait(timeout=60)
    lines = [line for line in log.read_text().splitlines() if line.startswith("gamut serve: ended: ")]
    assert len(lines) == 1, log.read_text()
    return lines[0].removeprefix("gamut serve: ended: ")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A `gamut serve --device cpu` on a socket of its own; its socket path and log."""
    tmp = tmp_path_factory.mktemp("serve")
    sock = tmp / "serve.sock"
    started = gamut(["serve", "--detach", "--device", "cpu", "--idle-timeout", "600"], sock)
    assert started.returncode == 0, started.stderr.decode()
    yield sock, sock.with_suffix(".log")
    gamut(["serve", "--stop"], sock)


def test_served_commands_match_their_own_processes(server, tmp_path):
    sock, log = server
    q, r = EXAMPLES / "mirnas.fa", EXAMPLES / "targets.fa"
    cases = [
        ["miranda", str(q), str(r)],  # to standard output
        ["miranda", str(q), str(r), "-quiet", "-out", "OUT.txt"],
        ["scan", str(q), str(r), "-o", "OUT.tsv"],
        ["miranda", str(q), str(tmp_path / "missing.fa")],  # an input error: one line, status 1
        ["scan", "--no-such-option"],  # a usage error: status 2
        ["--version"],
    ]
    before = served_count(log)
    for k, argv in enumerate(cases):
        runs = {}
        for how, where in (("served", sock), ("own", "off")):
            out = tmp_path / f"{how}{k}"
            out.mkdir()
            done = gamut(argv, where, cwd=out)
            written = sorted((p.name, p.read_bytes()) for p in out.iterdir())
            runs[how] = (done.returncode, done.stdout, done.stderr, written)
        assert runs["served"] == runs["own"], argv
    assert served_count(log) == before + len(cases)


def test_status_and_stop_say_what_listens(server, tmp_path):
    sock, _ = server
    status = gamut(["serve", "--status"], sock)
    assert status.returncode == 0 and b"warmed up on cpu" in status.stdout and b"commands run" in status.stdout
    none = tmp_path / "none.sock"
    for flag in ("--status", "--stop"):
        done = gamut(["serve", flag], none)
        assert done.returncode == 1 and b"no server listens" in done.stdout + done.stderr


def test_a_reader_that_stops_early_ends_the_command_as_its_own_process(server):
    """`gamut ... | head -1`: status 0, as a process of its own; nothing of the command's output
    reaches the server's log, and the server goes on."""
    sock, log = server
    argv = [sys.executable, "-m", "gamut", "miranda", str(EXAMPLES / "mirnas.fa"), str(EXAMPLES / "targets.fa")]
    codes = {}
    for how, where in (("served", sock), ("own", "off")):
        proc = subprocess.Popen(argv, env=_env(where), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout.readline()
        proc.stdout.close()
        codes[how] = (proc.wait(timeout=120), proc.stderr.read())
    assert codes["served"] == codes["own"]
    assert b"Scores for this hit" not in log.read_bytes() and b"Read Sequence" not in log.read_bytes()
    assert gamut(["--version"], sock).returncode == 0


def test_relative_paths_are_the_clients(server, tmp_path):
    sock, _ = server
    (tmp_path / "q.fa").write_bytes((EXAMPLES / "mirnas.fa").read_bytes())
    (tmp_path / "r.fa").write_bytes((EXAMPLES / "targets.fa").read_bytes())
    done = gamut(["miranda", "q.fa", "r.fa", "-out", "hits.txt"], sock, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Scores for this hit" in (tmp_path / "hits.txt").read_bytes()


def test_a_different_setting_runs_in_its_own_process(server, tmp_path):
    """NUMBA_NUM_THREADS is fixed when a process starts: a command with another value is declined
    by the server and runs itself, with the same output."""
    sock, log = server
    before = served_count(log)
    argv = ["miranda", str(EXAMPLES / "mirnas.fa"), str(EXAMPLES / "targets.fa")]
    own = gamut(argv, sock, NUMBA_NUM_THREADS="1")
    assert own.returncode == 0 and served_count(log) == before
    assert own.stdout == gamut(argv, sock).stdout
    assert served_count(log) == before + 1


def test_no_server_or_a_stale_socket_runs_here(tmp_path):
    assert run_served(["--version"], {"GAMUT_SERVER": str(tmp_path / "none.sock")}) is None
    assert run_served(["--version"], {"GAMUT_SERVER": "off"}) is None
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(stale))  # bound, never listening, then closed: a server that died
    assert stale.exists()
    assert run_served(["--version"], {"GAMUT_SERVER": str(stale)}) is None
    done = gamut(["--version"], stale)
    assert done.returncode == 0 and done.stdout.startswith(b"gamut ")


def test_a_second_server_on_the_same_socket_is_refused(server):
    sock, _ = server
    done = gamut(["serve", "--device", "cpu"], sock)
    assert done.returncode == 1
    assert b"already listens" in done.stderr and len(done.stderr.splitlines()) == 1


def test_interrupting_a_served_command_ends_it_and_the_server(tmp_path):
    """Ctrl-C reaches the command: exit 130, 'gamut: interrupted' on the client's stderr, no output
    nor temporary file; the server ends with it, and the next command runs in its own process."""
    sock = tmp_path / "own.sock"
    assert gamut(["serve", "--detach", "--device", "cpu"], sock).returncode == 0
    rng = np.random.default_rng(5)
    q, r = tmp_path / "q.fa", tmp_path / "r.fa"
    write_fasta(q, {"long": random_letters(rng, 10_000)})
    write_fasta(r, {f"u{k}": random_letters(rng, 20_000) for k in range(20)})
    code, _, err, out = signal_running_scan(tmp_path, q, r, signal.SIGINT, "--noenergy", old=None,
                                            environ={"GAMUT_SERVER": str(sock)})
    assert code == 130
    assert "gamut: interrupted" in err
    assert not out.exists() and not list(tmp_path.glob(".out.tsv.*.tmp"))
    deadline = time.monotonic() + 30
    while (tmp_path / "own.sock").exists() and listening(sock) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not listening(sock)
    assert gamut(["--version"], sock).returncode == 0
    log = sock.with_suffix(".log").read_text()
    assert "the client passed SIGINT on to the running command" in log
    assert "ended: SIGINT ended the command it was running" in log, log


def test_a_command_interrupted_before_it_started_ends_alone(tmp_path):
    """A client whose command the server has not started yet ends at once on Ctrl-C, with the
    status and message of an interrupted command; nothing is passed on."""
    sock = tmp_path / "busy.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as busy:
        busy.bind(str(sock))
        busy.listen(1)
        code = "import sys; from gamut.serve.client import run_served; sys.exit(run_served(['--version']))"
        proc = subprocess.Popen([sys.executable, "-c", code], env=_env(sock), stderr=subprocess.PIPE)
        busy.settimeout(60)
        conn, _ = busy.accept()
        with conn:
            message, fds = protocol.receive(conn, max_fds=3)
            for fd in fds:
                os.close(fd)
            assert message["run"] == ["--version"]
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 130
            assert proc.stderr.read().strip() == b"gamut: interrupted"
            conn.settimeout(5)
            assert conn.recv(1) == b""  # the client closed without passing the signal on


def test_a_server_that_ends_before_starting_the_command_leaves_it_to_run_here(tmp_path):
    """The server read the command and closed the connection without `started` (it was ending):
    the command never ran there, so it runs in its own process (not the lost-command error)."""
    sock = tmp_path / "closing.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(sock))
        listener.listen(1)
        code = "import sys; from gamut.serve.client import run_served; print(run_served(['--version']))"
        proc = subprocess.Popen([sys.executable, "-c", code], env=_env(sock), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        listener.settimeout(60)
        conn, _ = listener.accept()
        with conn:
            message, fds = protocol.receive(conn, max_fds=3)
            for fd in fds:
                os.close(fd)
            assert message["run"] == ["--version"]
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out == b"None\n" and err == b""


def test_messages_carry_descriptors_and_end_cleanly():
    a, b = socket.socketpair()
    read_end, write_end = os.pipe()
    try:
        protocol.send(a, {"run": ["x"] * 1000, "n": 3}, fds=(write_end,))
        message, fds = protocol.receive(b, max_fds=3)
        assert message == {"run": ["x"] * 1000, "n": 3} and len(fds) == 1
        os.write(fds[0], b"hi")
        os.close(fds[0])
        assert os.read(read_end, 2) == b"hi"
        a.close()
        assert protocol.receive(b) == (None, [])
    finally:
        b.close()
        os.close(read_end)
        os.close(write_end)


def test_socket_path_and_its_directory(tmp_path, monkeypatch):
    assert protocol.socket_path({"GAMUT_SERVER": "off"}) is None
    assert protocol.socket_path({"GAMUT_SERVER": str(tmp_path / "x.sock")}) == tmp_path / "x.sock"
    default = protocol.socket_path({"XDG_RUNTIME_DIR": str(tmp_path)})
    assert default.parent == tmp_path / f"gamut-{os.getuid()}" and default.suffix == ".sock"
    assert trust.prepare_directory(default, named=False) == default
    assert (default.parent.stat().st_mode & 0o777) == 0o700
    default.parent.chmod(0o770)
    with pytest.raises(trust.Untrusted, match="mode 0770, not 0700"):
        trust.prepare_directory(default, named=False)


def test_only_start_up_settings_must_match():
    env = {"NUMBA_NUM_THREADS": "4", "GAMUT_SERVER": "/x", "HOME": "/h", "CUDA_VISIBLE_DEVICES": "1", "TMPDIR": "/t"}
    assert protocol.settled_environment(env) == {"NUMBA_NUM_THREADS": "4", "CUDA_VISIBLE_DEVICES": "1", "TMPDIR": "/t"}


@pytest.mark.gpu
def test_served_gpu_scan_matches_its_own_process(tmp_path):
    sock = tmp_path / "gpu.sock"
    assert gamut(["serve", "--detach", "--device", "cuda"], sock).returncode == 0
    try:
        argv = ["miranda", str(EXAMPLES / "mirnas.fa"), str(EXAMPLES / "targets.fa"), "--device", "cuda"]
        served, own = gamut(argv, sock), gamut(argv, "off")
        assert served.returncode == own.returncode == 0
        assert served.stdout == own.stdout and b"Scores for this hit" in served.stdout
        # A worker process sharing the GPU, kept by the server for the second command.
        for _ in range(2):
            shared = gamut([*argv, "--gpus", "0,0", "--partition-cells", "20000"], sock)
            assert shared.returncode == 0 and shared.stdout == own.stdout, shared.stderr.decode()
        assert served_count(sock.with_suffix(".log")) == 3
    finally:
        gamut(["serve", "--stop"], sock)


def test_received_streams_are_not_inherited_by_processes_a_command_starts():
    """The descriptors a client hands over stay in the server only as close-on-exec copies (its
    descriptors 0-2 are what a command's children get)."""

    a, b = socket.socketpair()
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    try:
        protocol.send(a, {"run": []}, fds=(write_end,))
        message, fds = protocol.receive(b, max_fds=3)
        assert message == {"run": []} and len(fds) == 1
        assert not os.get_inheritable(fds[0])
        os.close(fds[0])
    finally:
        for fd in (read_end, write_end):
            os.close(fd)
        a.close()
        b.close()


#: A fresh interpreter (no resource tracker yet), as the server runs a command whose GPU workers
#: it keeps: the first worker also starts multiprocessing's resource tracker, which is handed the
#: number of ``sys.stderr``'s descriptor. Then checks that no process holds the command's pipes.
_KEPT_WORKERS_SCRIPT = """
import os, sys
from gamut.scanning.pipeline.gpu_workers import kept_workers, prestarted
from gamut.serve.server import _as_client, _standard_streams

own, streams = tuple(os.dup(k) for k in range(3)), (sys.stdin, sys.stdout, sys.stderr)
(out_r, out_w), (err_r, err_w), null = os.pipe(), os.pipe(), os.open(os.devnull, os.O_RDONLY)
with kept_workers(lambda: _standard_streams(own, streams)):
    with _as_client((null, out_w, err_w), os.getcwd(), 0o022, dict(os.environ)):
        with prestarted([0]) as pool:
            print("out"), print("err", file=sys.stderr)
    for fd in (null, out_w, err_w):
        os.close(fd)
    held = []
    for name, fd in (("stdout", out_r), ("stderr", err_r)):
        os.set_blocking(fd, False)
        try:
            while os.read(fd, 4096):
                pass
        except BlockingIOError:  # a writer is left
            held.append(name)
    print("alive" if pool.alive() else "dead", *held)
"""


def test_processes_a_kept_worker_starts_do_not_hold_the_commands_streams():
    done = subprocess.run([sys.executable, "-c", _KEPT_WORKERS_SCRIPT], env=_env("off"), capture_output=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["alive"], done.stderr.decode()


# --------------------------------------------------------------------------- busy, stale, racing, ending

def test_a_command_never_waits_for_a_busy_server(server, tmp_path):
    """While the server runs a command (held here: its output fills a pipe nobody reads yet), the
    next command runs at once in its own process, whole; then the first completes, served."""
    sock, log = server
    rng = np.random.default_rng(3)
    many = tmp_path / "many.fa"
    write_fasta(many, {f"r{k}": random_letters(rng, 100) for k in range(1000)})  # ~260 kB of output
    before = served_count(log)
    first = subprocess.Popen([sys.executable, "-m", "gamut", "fold", str(many)], env=_env(sock),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: server_status(sock)["busy"] or first.poll() is not None, "busy")
        assert first.poll() is None
        second = gamut(["fold", "GGGGAAAACCCC", "-o", "second.txt"], sock, cwd=tmp_path)
        assert second.returncode == 0 and second.stderr == b"", second.stderr.decode()
        assert first.poll() is None  # the first still waits for its reader: the second did not wait for it
        own = gamut(["fold", "GGGGAAAACCCC", "-o", "own.txt"], "off", cwd=tmp_path)
        assert own.returncode == 0 and (tmp_path / "second.txt").read_bytes() == (tmp_path / "own.txt").read_bytes()
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err.decode()
    assert out == gamut(["fold", str(many)], "off").stdout and out.count(b">") == 1000
    assert served_count(log) == before + 1  # the first only
    assert not server_status(sock)["busy"]


def test_a_changed_source_file_is_not_served_by_the_old_server(tmp_path):
    """A server started from a copy of the package; one of its source files changes (as under an
    editable install): the next command runs the new code in its own process, says so once, and
    the old server ends, saying why."""
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "gamut", copy / "gamut", ignore=shutil.ignore_patterns("__pycache__"))
    sock = tmp_path / "copy.sock"
    env = dict(os.environ, GAMUT_SERVER=str(sock), PYTHONPATH=str(copy))

    def version() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "gamut", "--version"], env=env, capture_output=True, timeout=120)

    proc = bare_server(sock, env)
    try:
        old = version()
        assert old.returncode == 0 and old.stderr == b"" and served_count(sock.with_suffix(".log")) == 1
        source = copy / "gamut" / "_version.py"
        source.write_text(source.read_text().replace('__version__ = "', '__version__ = "9.9.9+changed.'))
        new = version()
        assert new.returncode == 0 and new.stdout.startswith(b"gamut 9.9.9+changed.") and new.stdout != old.stdout
        assert new.stderr.decode().splitlines() == [
            f"gamut: note: the gamut server on {sock} runs the code it started with, and gamut/_version.py "
            "changed since: it ends, and this command runs in its own process"]
        assert ended(proc, sock.with_suffix(".log")) == "gamut's code changed since it started (gamut/_version.py changed)"
        assert served_count(sock.with_suffix(".log")) == 1 and not listening(sock)
        again = version()
        assert again.stdout == new.stdout and again.stderr == b""
    finally:
        if proc.poll() is None:
            proc.kill()


def test_another_environments_code_is_declined_without_ending_the_server(tmp_path):
    """A command of other code (another environment on the same GAMUT_SERVER) runs in its own
    process and the server stays; its own code changed, it ends."""
    package = tmp_path / "gamut"
    shutil.copytree(ROOT / "src" / "gamut", package, ignore=shutil.ignore_patterns("__pycache__"))
    said: list[str] = []
    server = Server(tmp_path / "x.sock", 0, said.append, code=Snapshot.take(package))
    assert server._refusal({"settled": server.settled, "code": server.code.digest}) is None
    assert server._refusal({"settled": server.settled, "code": Snapshot.take().digest}) == {
        "declined": "the command runs other code than the server"}
    assert server.status()["busy"] is False and server._ending is None
    (package / "serve" / "new_module.py").write_text("")
    assert server._refusal({"settled": server.settled, "code": "another"}) == {
        "declined": "the server's code is stale", "code_changed": "gamut/serve/new_module.py was added"}


def test_the_code_fingerprint_follows_sizes_and_times_of_the_packages_files(tmp_path):
    package = tmp_path / "gamut"
    (package / "sub" / "__pycache__").mkdir(parents=True)
    (package / "a.py").write_text("x = 1\n")
    (package / "sub" / "k.cu").write_text("// kernel\n")
    first = Snapshot.take(package)
    assert {"gamut/a.py", "gamut/sub/k.cu"} <= set(first.files)
    (package / "sub" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"compiled")  # not code of ours
    (package / ".a.py.swp").write_bytes(b"an editor's")
    assert Snapshot.take(package).digest == first.digest
    os.utime(package / "sub" / "k.cu", ns=(1, 1))
    later = Snapshot.take(package)
    assert later.digest != first.digest and first.change(later) == "gamut/sub/k.cu changed"
    (package / "a.py").unlink()
    assert later.change(Snapshot.take(package)) == "gamut/a.py was removed"


def test_two_detached_servers_started_at_once_make_one(tmp_path):
    """Exactly one server: one `--detach` says ready with its own server's pid, the other that a
    server is starting or listening, with that pid, and fails; the log says why the server ended."""
    sock = tmp_path / "race.sock"
    command = [sys.executable, "-m", "gamut", "serve", "--detach", "--device", "cpu"]
    both = [subprocess.Popen(command, env=_env(sock), stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    results = [(p.wait(timeout=300), p.stderr.read().decode()) for p in both]
    try:
        assert sorted(code for code, _ in results) == [0, 1], results
        ready = next(err for code, err in results if code == 0)
        refused = next(err for code, err in results if code == 1)
        pid = server_status(sock)["pid"]
        assert f"ready on {sock} (pid {pid};" in ready
        assert len(refused.splitlines()) == 1 and "already" in refused and f"(pid {pid})" in refused, refused
        again = gamut(["serve", "--device", "cpu"], sock)
        assert again.returncode == 1 and f"a server already listens on {sock} (pid {pid})".encode() in again.stderr
    finally:
        stopped = gamut(["serve", "--stop"], sock)
    assert stopped.returncode == 0 and b"stopped the server" in stopped.stderr
    log = sock.with_suffix(".log").read_text()
    assert log.count("ready on") == 1 and log.splitlines()[-1] == "gamut serve: ended: stopped by 'gamut serve --stop'"


def test_the_log_says_why_the_server_ended(tmp_path):
    """Idle, a signal, an error (with its traceback): each end is the log's last word."""
    idle = tmp_path / "idle.sock"
    assert ended(bare_server(idle, _env(idle), idle_timeout=0.2), idle.with_suffix(".log")) == "idle for 0.2 s"
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        sock = tmp_path / f"{sig.name}.sock"
        proc = bare_server(sock, _env(sock))
        proc.send_signal(sig)
        assert ended(proc, sock.with_suffix(".log")) == f"stopped by {sig.name}"
        assert not sock.exists()
    broken = tmp_path / "broken.sock"
    script = ("from gamut.serve.server import Server\n"
              "def broken(self): raise RuntimeError('a fault inside the server')\n"
              "Server._run_handed = broken\n" + BARE_SERVER)
    proc = bare_server(broken, _env(broken), script=script)
    assert ended(proc, broken.with_suffix(".log")) == "an error (its traceback is above)"
    log = broken.with_suffix(".log").read_text()
    assert "Traceback" in log and "RuntimeError: a fault inside the server" in log
    assert proc.returncode == 1 and not broken.exists()


def test_stop_while_a_command_runs_ends_the_server_after_it(tmp_path):
    """`gamut serve --stop` during a command: the command completes, served; commands that come
    meanwhile run in their own processes; then the server ends."""
    sock = tmp_path / "stop.sock"
    proc = bare_server(sock, _env(sock))
    log = sock.with_suffix(".log")
    rng = np.random.default_rng(4)
    many = tmp_path / "many.fa"
    write_fasta(many, {f"r{k}": random_letters(rng, 100) for k in range(1000)})
    first = subprocess.Popen([sys.executable, "-m", "gamut", "fold", str(many)], env=_env(sock),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: server_status(sock)["busy"] or first.poll() is not None, "busy")
        stop = gamut(["serve", "--stop"], sock)
        assert stop.returncode == 0 and b"ends after the command it is running" in stop.stderr
        meanwhile = gamut(["--version"], sock)
        assert meanwhile.returncode == 0 and meanwhile.stdout.startswith(b"gamut ") and meanwhile.stderr == b""
        out, err = first.communicate(timeout=300)
        assert first.returncode == 0 and out.count(b">") == 1000, err.decode()
        assert ended(proc, log) == "stopped by 'gamut serve --stop'"
        assert served_count(log) == 1 and not sock.exists()
    finally:
        for p in (first, proc):
            if p.poll() is None:
                p.kill()


def test_the_accepting_thread_ends_quietly_on_a_listener_already_closed(tmp_path):
    """A server that ended before its accepting thread first ran (a signal at once, on a busy
    machine) closed the listener: the thread ends with the reason noted, raising nothing (an
    uncaught error there printed a traceback into the log beside the main thread's last line)."""
    server = Server(tmp_path / "s.sock", 0.0, lambda line: None)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.close()
    server._accept(listener)  # raised OSError (settimeout on a closed socket) before
    assert server._ending is not None and server._ending.startswith("accepting connections failed")
