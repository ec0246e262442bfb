#!/usr/bin/env python3
"""Tiny TCP throughput probe for netsim.sh check.

  tcpbench.py recv PORT               accept one connection, read to EOF, print the rate
  tcpbench.py send HOST PORT SECONDS  send for SECONDS, then close

Both print one line: bytes=N seconds=S mbit=M cpu=P (P: this process's CPU time / wall, %).
The receiver times from the first byte to EOF, so it reports what the link delivered.
"""
import socket
import sys
import time

BUF = 1 << 20


def report(nbytes, secs, cpu):
    mbit = nbytes * 8 / secs / 1e6 if secs > 0 else 0.0
    print(f"bytes={nbytes} seconds={secs:.3f} mbit={mbit:.1f} cpu={100 * cpu / secs if secs > 0 else 0:.0f}",
          flush=True)


def recv(port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(1)
    srv.settimeout(30)
    conn, _ = srv.accept()
    conn.settimeout(60)
    buf = bytearray(BUF)
    view = memoryview(buf)
    n = conn.recv_into(view)
    t0, c0 = time.perf_counter(), time.process_time()
    total = n
    while n:
        n = conn.recv_into(view)
        total += n
    report(total, time.perf_counter() - t0, time.process_time() - c0)


def send(host, port, seconds):
    deadline = time.monotonic() + 10
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=10)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    payload = b"\x5a" * BUF
    t0, c0 = time.perf_counter(), time.process_time()
    total = 0
    while time.perf_counter() - t0 < seconds:
        sock.sendall(payload)
        total += len(payload)
    sock.shutdown(socket.SHUT_WR)
    sock.recv(1)  # wait until the receiver has read everything and closed
    report(total, time.perf_counter() - t0, time.process_time() - c0)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "recv":
        recv(int(sys.argv[2]))
    elif len(sys.argv) == 5 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)
