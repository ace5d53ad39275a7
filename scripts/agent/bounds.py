#!/usr/bin/env python3
"""Tries a forwarded `latchkey agent` socket's bounds, as a hostile remote would:

    bounds.py SOCKET REQUESTS

Sends REQUESTS token requests at once on one connection and counts the answers by kind; then
opens a connection that writes half a request, a byte at a time, slower than the agent takes,
and tells whether the agent closed it. Prints one JSON object:
{"answered", "busy", "other", "slowClosed", "slowSeconds", "newer"}; `newer` is the agent's
answer to a request of a wire version after its own.
"""
import json
import socket
import sys
import time


def main():
    path, count = sys.argv[1], int(sys.argv[2])
    report = {"answered": 0, "busy": 0, "other": 0}
    flood = socket.socket(socket.AF_UNIX)
    flood.connect(path)
    flood.sendall(b'{"operation":"token"}\n' * count)
    pending = b""
    seen = 0
    while seen < count:
        data = flood.recv(65536)
        if not data:
            break
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            answer = json.loads(line)
            seen += 1
            failure = answer.get("failure")
            key = "answered" if failure is None else "busy" if failure == "busy" else "other"
            report[key] += 1
    flood.close()

    slow = socket.socket(socket.AF_UNIX)
    slow.connect(path)
    started = time.monotonic()
    closed = False
    for byte in b'{"operation":"token"':
        try:
            slow.sendall(bytes([byte]))
        except OSError:
            closed = True
            break
        slow.settimeout(4)
        try:
            if slow.recv(1) == b"":
                closed = True
                break
        except socket.timeout:
            pass
        except OSError:
            closed = True
            break
        if time.monotonic() - started > 60:
            break
    report["slowClosed"] = closed
    report["slowSeconds"] = round(time.monotonic() - started)

    newer = socket.socket(socket.AF_UNIX)
    newer.connect(path)
    newer.sendall(b'{"operation":"token","wire":2}\n')
    newer.settimeout(30)
    report["newer"] = json.loads(newer.makefile("rb").readline())
    newer.close()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
