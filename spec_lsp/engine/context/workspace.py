"""The workspace: the text files of the editor's workspace folders, read from disk within bounds.

What is read, and what is not:
- only files inside the folders: every path is resolved (symlinks followed) and read only when
  it resolves inside one of them; a symlink leading outside is skipped;
- not what git ignores: in a git work tree the files are `git ls-files --cached --others
  --exclude-standard`; elsewhere a walk that skips hidden folders and build/dependency folders
  (node_modules, __pycache__, .venv, venv, build, dist, target) and honors the .gitignore files
  it meets (with the `pathspec` library);
- not binary files (a NUL byte in the first 8 KB, or not UTF-8), nor files over
  `max_file_bytes`, nor unreadable ones;
- at most `max_files` files and `max_bytes` bytes in all. Source files (the extensions the
  symbol index parses, and common others) are read first, each group in path order; what is
  left past a bound is never opened, and `limit_message` says so once.

Defaults: 2,000 files and 16 MB (a mid-sized repository's source, e.g. CPython's Lib/ is about
1,900 .py files; parsing the definitions of 16 MB of Python takes 3 to 4 s of one core at the
180-260 ms per MB measured, off the request path), 200 KB per file (larger files are generated
code or data more often than code a person calls into).

Thread-safety: `set_folders` reads on its caller's thread (a background one) and publishes the
files at the end; a newer `set_folders` makes an older scan stop at its next file. Readers get a
snapshot (`files()` never changes under them); `file_changed` / `file_deleted` replace it.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from spec_lsp.engine.context.symbols import GRAMMARS

log = logging.getLogger(__name__)

MAX_FILES = 2_000
MAX_BYTES = 16 * 1024 * 1024
MAX_FILE_BYTES = 200 * 1024
MAX_LISTED = 200_000  # paths listed at most (a folder like $HOME: the walk stops there)
GIT_TIMEOUT_S = 10.0
# git with fixed arguments, no shell; a workspace's own .git/config could name a program for
# git to run while it lists files (core.fsmonitor): turned off, and no hooks
GIT = ("git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")
SNIFF_BYTES = 8192
JUNK_DIRS = {"node_modules", "__pycache__", ".venv", "venv", "build", "dist", "target"}
SOURCE_EXTENSIONS = set(GRAMMARS) | {
    ".rb", ".php", ".cs", ".kt", ".kts", ".swift", ".scala", ".lua", ".sh", ".bash", ".zsh",
    ".m", ".mm", ".dart", ".ex", ".exs", ".erl", ".hs", ".ml", ".mli", ".clj", ".jl", ".r",
    ".pl", ".pm", ".vue", ".svelte", ".sql", ".zig", ".nim", ".groovy", ".fs", ".fsx",
}  # fmt: skip
SKIP_REASONS = ("binary", "large", "ignored", "unreadable", "over_limit", "outside")


def _source_first(rel: str) -> tuple[bool, str]:
    return os.path.splitext(rel)[1].lower() not in SOURCE_EXTENSIONS, rel


class _Stale(Exception):
    """A newer set_folders began: this scan stops."""


class Workspace:
    def __init__(
        self,
        *,
        max_files: int = MAX_FILES,
        max_bytes: int = MAX_BYTES,
        max_file_bytes: int = MAX_FILE_BYTES,
        files_setting: str = "",
        bytes_setting: str = "",
    ) -> None:
        """`files_setting`, `bytes_setting`: the names of the settings that raise the bounds,
        for the message that says they were hit."""
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.max_file_bytes = max_file_bytes
        self.settings = {"files": files_setting, "bytes": bytes_setting}
        self._lock = threading.Lock()
        self._folders: tuple[str, ...] = ()  # as given (normalized), the files' keys start so
        self._real: tuple[str, ...] = ()  # the same, symlinks resolved (what "inside" means)
        self._files: dict[str, str] = {}  # never changed once published: replaced
        self._bytes = 0
        self._skipped: dict[str, int] = dict.fromkeys(SKIP_REASONS, 0)
        self._limited = False
        self._message: str | None = None
        self._message_shown = False
        self._mode = ""  # "git" or "walk" (of the last folder scanned)
        self._scan_ms = 0.0
        self._generation = 0
        self._scanning = False
        self._changed_while_scanning: set[str] = set()
        self._git: dict[str, bool] = {}  # folder -> listed by git

    # -- reading ----------------------------------------------------------------------------------
    @property
    def folders(self) -> tuple[str, ...]:
        return self._folders

    def files(self) -> Mapping[str, str]:
        """Absolute path -> text: a snapshot (later changes replace it, never alter it)."""
        return MappingProxyType(self._files)

    def contains(self, path: str) -> bool:
        """Inside one of the folders (resolved: a symlink out of them is outside)."""
        return self._inside(os.path.realpath(path)) and self._folder_of(path) is not None

    def relative(self, path: str) -> str:
        """The path as shown to the model: relative to its folder (prefixed by the folder's name
        when there are several), else the file's name."""
        found = self._locate(path)
        if found is None:
            return os.path.basename(path) or path
        folder, _, rel = found
        if len(self._folders) > 1:
            rel = os.path.join(os.path.basename(folder), rel)
        return rel.replace(os.sep, "/")

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "folders": list(self._folders),
                "files": len(self._files),
                "bytes": self._bytes,
                "skipped": dict(self._skipped),
                "limited": self._limited,
                "listing": self._mode,
                "scan_ms": round(self._scan_ms, 1),
                "max_files": self.max_files,
                "max_bytes": self.max_bytes,
                "max_file_bytes": self.max_file_bytes,
            }

    def limit_message(self) -> str | None:
        """What was left unread when a bound was hit (once: None afterwards, until a bound is
        hit again)."""
        with self._lock:
            if self._message is None or self._message_shown:
                return None
            self._message_shown = True
            return self._message

    # -- the folders ------------------------------------------------------------------------------
    def set_folders(self, folders: Sequence[str]) -> None:
        """Read the folders' files (replacing those of the folders before). Slow on a large
        folder: call it on a thread of its own. A later call makes this one stop early."""
        given = tuple(dict.fromkeys(os.path.abspath(f) for f in folders if f))
        with self._lock:
            self._generation += 1
            generation = self._generation
            self._folders = given
            self._real = tuple(os.path.realpath(f) for f in given)
            self._scanning = True
            self._changed_while_scanning = set()
        started = time.perf_counter()
        try:
            files, total, skipped, hit, mode = self._scan(given, generation)
        except _Stale:
            return
        except Exception:  # a bug must not leave file changes waiting on a scan forever
            log.exception("reading the workspace folders %s", given)
            files, total, skipped, hit, mode = {}, 0, dict.fromkeys(SKIP_REASONS, 0), None, ""
        with self._lock:
            if generation != self._generation:
                return
            self._files, self._bytes, self._skipped = files, total, skipped
            self._mode = mode
            self._scan_ms = (time.perf_counter() - started) * 1000
            self._scanning = False
            changed, self._changed_while_scanning = self._changed_while_scanning, set()
            self._set_limited(hit)
        for path in sorted(changed):  # told while the scan read: read again
            self.file_changed(path)

    def _set_limited(self, hit: str | None) -> None:
        """(Under the lock.) `hit`: the message of a bound just hit, None if none was."""
        self._limited = hit is not None or self._limited
        if hit is not None and self._message != hit:
            self._message, self._message_shown = hit, False

    def _scan(
        self, folders: tuple[str, ...], generation: int
    ) -> tuple[dict[str, str], int, dict[str, int], str | None, str]:
        files: dict[str, str] = {}
        skipped = dict.fromkeys(SKIP_REASONS, 0)
        total = 0
        hit: str | None = None
        modes = []
        for folder in folders:
            listed, mode = self._list(folder, skipped, generation)
            modes.append(mode)
            for number, rel in enumerate(sorted(listed, key=_source_first)):
                if number % 64 == 0 and generation != self._generation:
                    raise _Stale
                path = os.path.join(folder, rel)
                if len(files) >= self.max_files:
                    skipped["over_limit"] += len(listed) - number
                    hit = hit or self._bound_message(folder, "files", self.max_files)
                    break
                text, reason, size = self._read(path, self.max_bytes - total)
                if reason == "over_limit":
                    hit = hit or self._bound_message(folder, "bytes", self.max_bytes)
                if text is None:
                    skipped[reason] += 1
                    continue
                files[path] = text
                total += size
        return files, total, skipped, hit, "+".join(sorted(set(modes)))

    def _bound_message(self, folder: str, what: str, bound: int) -> str:
        if what == "files":
            has, reads = f"more than {bound:,} files", f"the first {bound:,} files"
        else:
            mb = f"{bound / (1024 * 1024):g} MB"
            has, reads = f"more than {mb} of text", f"files up to {mb} in all"
        setting = self.settings[what]
        raise_it = f"; set {setting} to read more" if setting else ""
        return (
            f"workspace {folder} has {has}: context from other files reads {reads} (source "
            f"files first, in path order) and leaves the rest unread{raise_it}; a file you "
            "open is still seen."
        )

    # -- listing ----------------------------------------------------------------------------------
    def _list(self, folder: str, skipped: dict[str, int], generation: int) -> tuple[list[str], str]:
        """The folder's files (relative paths) git does not ignore. A folder git lists nothing
        in (one that an enclosing repository ignores whole: a package under .venv, a vendored
        tree) was opened on purpose: it is walked, with its own .gitignore files."""
        listed = _git_files(folder)
        with self._lock:
            self._git[folder] = bool(listed)
        if listed:
            return listed[:MAX_LISTED], "git"
        return list(self._walk(folder, skipped, generation)), "walk"

    def _walk(self, folder: str, skipped: dict[str, int], generation: int) -> Iterator[str]:
        ignores: dict[str, Any] = {}  # directory (relative) -> its .gitignore's spec
        count = 0
        for root, dirs, names in os.walk(folder):  # symlinked folders are not followed
            if generation != self._generation:
                raise _Stale
            rel_root = os.path.relpath(root, folder)
            rel_root = "" if rel_root == "." else rel_root
            spec = _gitignore(os.path.join(root, ".gitignore"))
            if spec is not None:
                ignores[rel_root] = spec
            kept = []
            for d in sorted(dirs):
                rel = os.path.join(rel_root, d)
                if d.startswith(".") or d in JUNK_DIRS or _ignored(ignores, rel, True):
                    skipped["ignored"] += 1
                    continue
                kept.append(d)
            dirs[:] = kept
            for name in sorted(names):
                rel = os.path.join(rel_root, name)
                if name.startswith(".") or _ignored(ignores, rel, False):
                    skipped["ignored"] += 1
                    continue
                count += 1
                if count > MAX_LISTED:
                    return
                yield rel

    def _is_ignored(self, folder: str, path: str) -> bool:
        """A file that appeared after the scan: ignored as the scan would have?"""
        rel = os.path.relpath(path, folder)
        parts = rel.split(os.sep)
        if ".git" in parts:
            return True
        if self._git.get(folder):
            return _git_ignores(folder, rel)
        if any(p.startswith(".") or p in JUNK_DIRS for p in parts[:-1]) or parts[-1][:1] == ".":
            return True
        ignores: dict[str, Any] = {}
        for i in range(len(parts)):
            here = os.path.join(*parts[:i]) if i else ""
            spec = _gitignore(os.path.join(folder, here, ".gitignore"))
            if spec is not None:
                ignores[here] = spec
        return any(
            _ignored(ignores, os.path.join(*parts[: i + 1]), i < len(parts) - 1)
            for i in range(len(parts))
        )

    # -- one file ---------------------------------------------------------------------------------
    def _read(self, path: str, room: int) -> tuple[str | None, str, int]:
        """(text, "", size) or (None, why it was skipped, 0). `room`: bytes left in the bound.
        A file is read at its own path only: a symlink (to a file or through a folder) is
        skipped, as "outside" if it leads out of the folders (its target, inside, is listed on
        its own)."""
        real = os.path.realpath(path)
        if not self._inside(real):
            return None, "outside", 0
        if real != self._resolved(path):
            return None, "ignored", 0
        try:
            info = os.stat(real)
        except OSError:
            return None, "unreadable", 0
        if not _is_regular(info.st_mode):
            return None, "ignored", 0
        if info.st_size > self.max_file_bytes:
            return None, "large", 0
        if info.st_size > room:
            return None, "over_limit", 0
        try:
            with open(real, "rb") as handle:
                data = handle.read(self.max_file_bytes + 1)
        except OSError:
            return None, "unreadable", 0
        if len(data) > self.max_file_bytes:
            return None, "large", 0
        if len(data) > room:
            return None, "over_limit", 0
        if b"\0" in data[:SNIFF_BYTES]:
            return None, "binary", 0
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None, "binary", 0
        return text, "", len(data)

    def _resolved(self, path: str) -> str | None:
        """Where `path` lies with its folder resolved but nothing below it."""
        found = self._locate(path)
        return os.path.join(found[1], found[2]) if found is not None else None

    def _inside(self, real: str) -> bool:
        return any(real == f or real.startswith(f.rstrip(os.sep) + os.sep) for f in self._real)

    def _locate(self, path: str) -> tuple[str, str, str] | None:
        """(folder as given, folder resolved, path relative to it) for a path under a folder
        (by the folder's name as given or resolved; nothing below it resolved)."""
        path = os.path.abspath(path)
        for given, real in zip(self._folders, self._real):
            for folder in (given, real):
                if path.startswith(folder.rstrip(os.sep) + os.sep):
                    return given, real, os.path.relpath(path, folder)
        return None

    def _folder_of(self, path: str) -> str | None:
        found = self._locate(path)
        return found[0] if found is not None else None

    # -- changes on disk --------------------------------------------------------------------------
    def file_changed(self, path: str) -> None:
        """A file created or changed on disk (workspace/didChangeWatchedFiles): read again,
        within the bounds; a path outside the folders is ignored."""
        found = self._locate(path)
        if found is None or not self.contains(path):
            return
        folder = found[0]
        path = os.path.join(folder, found[2])  # the key the scan gives it
        with self._lock:
            if self._scanning:
                self._changed_while_scanning.add(path)
                return
            known = path in self._files
            room = self.max_bytes - self._bytes + len(self._files.get(path, "").encode())
            full = not known and len(self._files) >= self.max_files
        if not known and (full or self._is_ignored(folder, path)):
            if full:
                with self._lock:
                    self._skipped["over_limit"] += 1
                    self._set_limited(self._bound_message(folder, "files", self.max_files))
            return
        text, reason, size = self._read(path, room)
        with self._lock:
            files = dict(self._files)
            old = files.pop(path, None)
            if text is not None:
                files[path] = text
            if reason == "over_limit":
                self._skipped["over_limit"] += 1
                self._set_limited(self._bound_message(folder, "bytes", self.max_bytes))
            self._bytes += size - (len(old.encode()) if old is not None else 0)
            self._files = files

    def file_deleted(self, path: str) -> None:
        """A file (or a folder: everything under it) deleted on disk."""
        found = self._locate(path)
        if found is None:
            return
        path = os.path.join(found[0], found[2])
        under = path.rstrip(os.sep) + os.sep
        with self._lock:
            if self._scanning:
                self._changed_while_scanning.add(path)
            gone = [p for p in self._files if p == path or p.startswith(under)]
            if not gone:
                return
            files = dict(self._files)
            for p in gone:
                self._bytes -= len(files.pop(p).encode())
            self._files = files


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)


def _git_files(folder: str) -> list[str] | None:
    """The files git lists under `folder` (tracked and untracked, not ignored), relative to it;
    None when the folder is not in a git work tree (or git is missing or too slow)."""
    try:
        done = subprocess.run(
            [*GIT, "-C", folder, "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        log.info("git ls-files in %s: %s (walking the folder instead)", folder, error)
        return None
    if done.returncode != 0:
        return None
    names = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    return list(dict.fromkeys(os.path.normpath(n) for n in names if n))


def _git_ignores(folder: str, rel: str) -> bool:
    try:
        done = subprocess.run(
            [*GIT, "-C", folder, "check-ignore", "-q", "--", rel],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _gitignore(path: str) -> Any | None:
    """A .gitignore's patterns (None without the file, or without `pathspec`)."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    try:
        import pathspec
    except ImportError:  # pragma: no cover - pathspec is a dependency
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ignored(ignores: dict[str, Any], rel: str, is_dir: bool) -> bool:
    """Whether a .gitignore above `rel` (relative to the folder) ignores it."""
    for base, spec in ignores.items():
        if base and not rel.startswith(base + os.sep):
            continue
        inner = os.path.relpath(rel, base) if base else rel
        inner = inner.replace(os.sep, "/") + ("/" if is_dir else "")
        if spec.match_file(inner):
            return True
    return False
