"""Whether a server socket is this user's own, before anything is sent to it or bound there.

A command hands its command line, directory, environment (tokens included) and standard streams
to the process behind the socket, so on a shared machine it must be sure that the process is this
user's ``gamut serve`` and no one else's. Three checks, all before the first byte is sent:

- the socket's directory is a real directory (not a symbolic link) owned by this user, and private:
  mode 0700 for the default directory (``gamut-UID`` under ``$XDG_RUNTIME_DIR`` or ``/tmp``,
  which another user could have made first), not writable by group or others for a socket named
  by ``GAMUT_SERVER`` (whose directory, symbolic links resolved, the user chose);
- the socket itself is a socket owned by this user;
- after ``connect``, the listening process runs as this user (``SO_PEERCRED``, which the kernel
  records when the server listens and no one can forge).

The last check alone keeps a command from another user's process; the others also keep another
user from replacing or removing this user's socket. The server uses the same checks on the
directory it binds in (:func:`prepare_directory`) and never uses one that someone else made.

Light on purpose: the client side runs before any of gamut's heavy imports.
"""
from __future__ import annotations

import os
import socket
import stat
import struct
from pathlib import Path

_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class Untrusted(Exception):
    """The socket (or its directory) may be another user's: why, in words."""


def peer_uid(sock: socket.socket) -> int:
    """The user id of the process at the other end of a connected Unix socket."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        raise Untrusted("this system cannot tell who listens on a socket (no SO_PEERCRED)")
    return _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, option, _UCRED.size))[1]


def check_directory(directory: str | os.PathLike, private: bool) -> None:
    """Raise :class:`Untrusted` unless ``directory`` is a real directory of this user's that no
    one else can write (``private``: mode 0700, no permission for anyone else)."""
    info = os.lstat(directory)
    if stat.S_ISLNK(info.st_mode):
        raise Untrusted(f"its directory {directory} is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise Untrusted(f"{directory} is not a directory")
    if info.st_uid != os.getuid():
        raise Untrusted(f"its directory {directory} is owned by uid {info.st_uid}, not by you (uid {os.getuid()})")
    mode = stat.S_IMODE(info.st_mode)
    if private and mode & 0o077:
        raise Untrusted(f"its directory {directory} has mode {mode:04o}, not 0700")
    if not private and mode & 0o022:
        raise Untrusted(f"its directory {directory} is writable by others (mode {mode:04o})")


def _checked_path(path: Path, named: bool) -> Path:
    """``path`` in its checked directory: for a socket named by ``GAMUT_SERVER``, the directory
    with its symbolic links resolved (the path then connected to or bound is that one)."""
    directory = Path(os.path.realpath(path.parent)) if named else path.parent
    check_directory(directory, private=not named)
    return directory / path.name


def connect(path: Path, named: bool) -> socket.socket | None:
    """A connection to the server on ``path``, after the checks of this module; None where no one
    listens there (no socket, or a stale one: the normal case without a server). Raises
    :class:`Untrusted` where something there may be another user's; nothing has been sent then."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except PermissionError:  # a directory we cannot enter: say whose it is
        pass
    try:
        target = _checked_path(path, named)
        info = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except PermissionError as exc:
        raise Untrusted(f"it cannot be read ({exc.strerror})") from None
    if not stat.S_ISSOCK(info.st_mode):
        raise Untrusted("it is not a socket")
    if info.st_uid != os.getuid():
        raise Untrusted(f"it is owned by uid {info.st_uid}, not by you (uid {os.getuid()})")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(target))
        uid = peer_uid(sock)
    except OSError:  # nobody listens: a server that died left its socket
        sock.close()
        return None
    except Untrusted:
        sock.close()
        raise
    if uid != os.getuid():
        sock.close()
        raise Untrusted(f"the process listening on it runs as uid {uid}, not as you (uid {os.getuid()})")
    return sock


def prepare_directory(path: Path, named: bool) -> Path:
    """Where a server of this user binds for ``path``: the default directory is made (mode 0700)
    if it does not exist; either must pass :func:`check_directory`, or :class:`Untrusted` says
    why (a directory someone else made is never used)."""
    if not named:
        try:
            path.parent.mkdir(mode=0o700)
        except FileExistsError:  # ours from before, or someone else's: checked below
            pass
        except OSError as exc:
            raise Untrusted(f"its directory {path.parent} cannot be made ({exc.strerror})") from None
    try:
        return _checked_path(path, named)
    except (FileNotFoundError, NotADirectoryError):
        raise Untrusted(f"there is no directory {path.parent}") from None
