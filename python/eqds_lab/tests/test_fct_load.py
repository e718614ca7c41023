"""eqds_lab.fct_load, the closed-loop download load of experiments/eqdsd-fct, on
loopback: no namespaces needed."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

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


def test_a_short_answer_is_an_error_naming_the_server(server: int) -> None:
    # A server refuses (closes on) requests beyond its limit: the client must not
    # take the missing bytes for a finished download.
    buf = memoryview(bytearray(fct_load.CHUNK))
    with pytest.raises(ConnectionError, match="127.0.0.1 closed after 0 of"):
        fct_load.fetch_one("127.0.0.1", server, fct_load.MAX_SIZE + 1, buf)


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
