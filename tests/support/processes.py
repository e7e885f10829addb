"""Processes for the replica tests: free localhost ports in a row (nginx on the first, the replicas on the next
ones), and which processes a process started and whether they still run."""

from __future__ import annotations

import random
import socket
from pathlib import Path


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


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (children, their children...), from /proc."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, todo = [], [root]
    while todo:
        parent = todo.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        todo += children
    return found


def alive(pid: int) -> bool:
    """Running (a zombie, ended but not yet reaped, counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


def environ(pid: int) -> dict[str, str]:
    """The environment ``pid`` was started with, from /proc."""
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)
