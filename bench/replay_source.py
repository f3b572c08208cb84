"""A small key-value store with a text protocol (the replay types the marked function)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class Store:
    data: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: str) -> str | None:
        with self.lock:
            return self.data.get(key)

    def set(self, key: str, value: str) -> None:
        with self.lock:
            self.data[key] = value

    def delete(self, key: str) -> bool:
        with self.lock:
            return self.data.pop(key, None) is not None


def handle_get(store: Store, args: list[str]) -> str:
    if len(args) != 1:
        return "ERR wrong number of arguments for GET"
    value = store.get(args[0])
    return "NIL" if value is None else value


# <typed>
def handle_set(store: Store, args: list[str]) -> str:
    if len(args) != 2:
        return "ERR wrong number of arguments for SET"
    store.set(args[0], args[1])
    return "OK"


# <typed>


def handle_delete(store: Store, args: list[str]) -> str:
    if len(args) != 1:
        return "ERR wrong number of arguments for DEL"
    return "1" if store.delete(args[0]) else "0"


COMMANDS = {"GET": handle_get, "SET": handle_set, "DEL": handle_delete}


def dispatch(store: Store, line: str) -> str:
    name, *args = line.split()
    handler = COMMANDS.get(name.upper())
    if handler is None:
        return f"ERR unknown command {name}"
    return handler(store, args)
