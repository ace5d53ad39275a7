#!/usr/bin/env python3
"""Sends one raw request line to a `latchkey agent` socket and prints the answer line:

    ask.py SOCKET JSON

SOCKET `-` is the one LATCHKEY_AGENT_SOCK names.
"""
import os
import socket
import sys


def main():
    connection = socket.socket(socket.AF_UNIX)
    connection.connect(os.environ["LATCHKEY_AGENT_SOCK"] if sys.argv[1] == "-" else sys.argv[1])
    connection.sendall(sys.argv[2].encode() + b"\n")
    answer = b""
    while not answer.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk:
            break
        answer += chunk
    print(answer.decode(), end="", flush=True)


if __name__ == "__main__":
    sys.exit(main())
