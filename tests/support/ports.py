"""Free localhost ports in a row (nginx on the first, the replicas on the next ones)."""

from __future__ import annotations

import random
import socket


def free_port_block(count: int, tries: int = 50) -> int:
    """The first of ``count`` consecutive ports that are free on 127.0.0.1 right now."""
    for _ in range(tries):
        first = random.randrange(20_000, 60_000 - count)
        sockets = []
        try:
            for port in range(first, first + count):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError(f"no {count} free ports in a row found")
