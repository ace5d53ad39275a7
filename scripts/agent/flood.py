#!/usr/bin/env python3
"""Floods a `latchkey agent` socket, as a hostile or broken peer would:

    flood.py SOCKET COUNT BATCH LIMIT

Opens COUNT connections, BATCH at a time held open together, and counts those the agent turned
away (it answers `busy` and closes beyond its LIMIT of connections); then sends a request and goes away before
the answer, and half a request and goes away. Prints one JSON object: {"opened", "busy"}.
"""
import json
import select
import socket
import sys
import time


def main():
    path, count, batch, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    opened = busy = 0
    for start in range(0, count, batch):
        held = []
        for _ in range(min(batch, count - start)):
            connection = socket.socket(socket.AF_UNIX)
            connection.connect(path)
            held.append(connection)
        opened += len(held)
        # The turned-away ones answer at once; the admitted ones say nothing.
        # The admitted stay quiet: wait for the rest (at most 10 s).
        waiting, started, answered = list(held), time.monotonic(), 0
        while waiting and answered < len(held) - limit and time.monotonic() < started + 10:
            readable, _, _ = select.select(waiting, [], [], 0.1)
            answered += len(readable)
            for connection in readable:
                if b"busy" in connection.recv(4096):
                    busy += 1
                waiting.remove(connection)
        for connection in held:
            connection.close()
    # A request whose asker goes away before the answer, and half a request.
    for payload in (b'{"operation":"token"}\n', b'{"operation":"tok'):
        connection = socket.socket(socket.AF_UNIX)
        connection.connect(path)
        connection.sendall(payload)
        connection.close()
    print(json.dumps({"opened": opened, "busy": busy}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
