"""The mailbox through which cluster workers on this machine hand their tiles' pages to the client
(:mod:`gamut.io.fd_mailbox`)."""
from __future__ import annotations

import multiprocessing
import os
import stat

import numpy as np
import pytest

from gamut.io import fd_mailbox
from gamut.io.memfd_array import MemfdArray, joined

pytestmark = pytest.mark.skipif(not fd_mailbox.usable(), reason="needs memfds and Unix sockets (Linux)")


def _text(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, n // 3, dtype=np.uint8), rng.integers(0, 256, n - n // 3, dtype=np.uint8)]


def test_pages_posted_are_taken_as_they_were_sent():
    pieces = _text(300_001, 1)
    tile = joined(pieces)
    assert isinstance(tile, MemfdArray) and tile.fd is not None
    with fd_mailbox.Mailbox() as box:
        assert stat.S_IMODE(os.stat(box.folder).st_mode) == 0o700  # this user's alone
        sent = fd_mailbox.post_arrays([(3, (tile, np.arange(4))), (4, (np.zeros(2, np.uint8), None))], box.address)
        (g, (ticket, offsets)), (g2, (plain, nothing)) = sent
        assert (g, g2) == (3, 4) and isinstance(ticket, fd_mailbox.Ticket) and ticket.nbytes == tile.nbytes
        assert isinstance(plain, np.ndarray) and nothing is None  # only a memfd's pages go by the mailbox
        del tile  # the sender's descriptor closed: the pages live on in the one sent
        back = fd_mailbox.take_arrays(sent, box)
        assert bytes(back[0][1][0]) == b"".join(p.tobytes() for p in pieces)
        assert back[0][1][0].flags.writeable is False and (back[0][1][1] == np.arange(4)).all()
        folder = box.folder
    assert not os.path.exists(folder)  # closed: the socket and its folder gone


def _post_from_another_process(address: str, n: int, queue) -> None:
    tile = joined(_text(n, 7))
    queue.put(fd_mailbox.post(address, tile.fd, tile.nbytes))


def test_another_process_of_this_user_hands_its_pages_over():
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    with fd_mailbox.Mailbox() as box:
        proc = ctx.Process(target=_post_from_another_process, args=(box.address, 70_000, queue))
        proc.start()
        ticket = queue.get(timeout=60)
        proc.join(60)
        assert proc.exitcode == 0 and isinstance(ticket, fd_mailbox.Ticket)
        got = box.take(ticket)  # the sender has exited: its memfd lives on in this process
    assert bytes(got) == b"".join(p.tobytes() for p in _text(70_000, 7))


def test_a_mailbox_that_cannot_be_reached_or_does_not_keep_the_pages_leaves_the_bytes_in_the_result(
        tmp_path, monkeypatch):
    tile = joined(_text(1000, 2))
    assert fd_mailbox.post(str(tmp_path / "nobody"), tile.fd, tile.nbytes) is None
    assert fd_mailbox.post_arrays((tile,), str(tmp_path / "nobody"))[0] is tile
    with fd_mailbox.Mailbox() as box:  # a sender of another user (as the mailbox sees it): no answer
        monkeypatch.setattr(fd_mailbox, "peer_uid", lambda conn: os.getuid() + 1)
        assert fd_mailbox.post_arrays((tile,), box.address)[0] is tile


def test_a_ticket_never_delivered_or_without_a_mailbox_is_an_error():
    with fd_mailbox.Mailbox() as box:
        with pytest.raises(TimeoutError, match="did not reach this process"):
            box.take(fd_mailbox.Ticket("0" * 32, 10), timeout=0.2)
    with pytest.raises(OSError, match="mailbox"):
        fd_mailbox.take_arrays([fd_mailbox.Ticket("0" * 32, 10)], None)


def test_closing_twice_and_pages_not_taken_are_let_go():
    box = fd_mailbox.Mailbox()
    tile = joined(_text(5000, 3))
    ticket = fd_mailbox.post(box.address, tile.fd, tile.nbytes)
    assert ticket is not None
    box.close()
    box.close()
    with pytest.raises(OSError, match="closed"):
        box.take(ticket, timeout=1)
