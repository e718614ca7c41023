"""eqds_lab.fct_load, the closed-loop download load of experiments/eqdsd-fct, on
loopback: no namespaces needed."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from eqds_lab import fct_load

MODULE = (sys.executable, "-m", "eqds_lab.fct_load")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server() -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen([*MODULE, "serve", "--port", str(port)])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, "the server exited"
                assert time.monotonic() < deadline, "the server did not listen"
                time.sleep(0.05)
        yield port
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_fetch_downloads_whole_objects_back_to_back(server: int) -> None:
    args = ("--servers", "127.0.0.1", "--port", str(server), "--size", "300000")
    out = subprocess.run(
        [*MODULE, "fetch", *args, "--seconds", "0.5", "--seed", "3"],
        check=True, capture_output=True, text=True, timeout=30,
    ).stdout  # fmt: skip
    report = json.loads(out)
    objects = report["objects"]
    assert report["size"] == 300_000 and len(objects) >= 2, report
    assert all(o["server"] == "127.0.0.1" and o["fct_us"] > 0 for o in objects), objects
    starts = [o["start_s"] for o in objects]
    assert starts == sorted(starts) and starts[0] < 0.1, starts


def test_fetch_one_takes_exactly_the_size_asked_for(server: int) -> None:
    buf = memoryview(bytearray(fct_load.CHUNK))
    assert fct_load.fetch_one("127.0.0.1", server, 200_001, buf) == 200_001


def test_a_refused_request_is_an_error_naming_the_server(server: int) -> None:
    # A server refuses (closes on) requests beyond its limit: the client must not
    # take the missing bytes for a finished download.
    buf = memoryview(bytearray(fct_load.CHUNK))
    with pytest.raises(ConnectionError, match="127.0.0.1 closed after 0 of"):
        fct_load.fetch_one("127.0.0.1", server, fct_load.MAX_SIZE + 1, buf)


@contextmanager
def answering(extra: int) -> Iterator[int]:
    """A one-shot server on loopback answering a request with `extra` bytes more
    (fewer, if negative) than it asks for, then closing; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            (size,) = fct_load.REQUEST.unpack(conn.recv(fct_load.REQUEST.size, socket.MSG_WAITALL))
            conn.sendall(bytes(size + extra))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        thread.join(timeout=10)
        listener.close()


@pytest.mark.parametrize(
    ("extra", "message"), [(-1, "closed after 99999 of 100000"), (7, "sent more than")]
)
def test_an_answer_of_the_wrong_length_is_an_error(extra: int, message: str) -> None:
    buf = memoryview(bytearray(fct_load.CHUNK))
    with answering(extra) as port, pytest.raises(ConnectionError, match=message):
        fct_load.fetch_one("127.0.0.1", port, 100_000, buf)


def test_failed_downloads_are_listed_and_the_client_goes_on() -> None:
    # Nothing listens on the port: every download fails, each is listed with its
    # error, and the client keeps trying until its time is up.
    report = fct_load.fetch(["127.0.0.1"], free_port(), 1000, 0.2, seed=1)
    objects = report["objects"]
    assert len(objects) >= 2, objects
    assert all("error" in o and "fct_us" not in o for o in objects), objects


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--size", "0"), "--size must be"),
        (("--servers", ","), "--servers names no address"),
        (("--seconds", "soon"), "--seconds"),
    ],
)
def test_bad_arguments_are_named(args: tuple[str, ...], message: str) -> None:
    base = {"--servers": "127.0.0.1", "--port": "1", "--size": "10", "--seconds": "1"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    argv = [x for kv in base.items() for x in kv]
    cmd = [*MODULE, "fetch", *argv]
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and message in r.stderr, r.stderr
