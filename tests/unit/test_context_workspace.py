"""The workspace folders read from disk within bounds: no more files or bytes than allowed (the
rest never opened, a message said once), nothing git ignores, no binary, large or unreadable
file, nothing outside the folders (symlinks included), kept current by file changes."""

from __future__ import annotations

import builtins
import os
import subprocess
from pathlib import Path

import pytest

from spec_lsp.engine.context import workspace as workspace_module
from spec_lsp.engine.context.workspace import Workspace


@pytest.fixture
def opened(monkeypatch) -> list[str]:
    """Every file the workspace opens (its module's `open`)."""
    paths: list[str] = []
    real_open = builtins.open

    def counting_open(file, *args, **kwargs):
        paths.append(os.path.realpath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(workspace_module, "open", counting_open, raising=False)
    return paths


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def rel_files(ws: Workspace, root: Path) -> list[str]:
    return sorted(os.path.relpath(p, root) for p in ws.files())


@pytest.mark.parametrize("git", [False, True], ids=["walk", "git"])
def test_more_files_than_the_bound_reads_the_first_only_and_says_so_once(
    tmp_path: Path, opened: list[str], git: bool
) -> None:
    if git:
        git_init(tmp_path)
    write(tmp_path, {f"m{i:02}.py": f"X{i} = {i}\n" for i in range(12)})
    write(tmp_path, {"notes.txt": "read after the source files\n"})
    ws = Workspace(max_files=5)
    ws.set_folders([str(tmp_path)])
    assert rel_files(ws, tmp_path) == [f"m{i:02}.py" for i in range(5)]
    data = [p for p in opened if not p.endswith(".gitignore")]
    assert sorted(data) == sorted(os.path.realpath(p) for p in ws.files())  # no more opened
    stats = ws.stats()
    assert stats["limited"] is True and stats["skipped"]["over_limit"] == 8
    assert stats["listing"] == ("git" if git else "walk")
    message = ws.limit_message()
    assert message is not None
    assert str(tmp_path) in message and "more than 5 files" in message
    assert "the first 5 files" in message and "rest unread" in message
    assert ws.limit_message() is None  # once


def test_more_bytes_than_the_bound(tmp_path: Path, opened: list[str]) -> None:
    write(tmp_path, {f"m{i}.py": "x" * 99 + "\n" for i in range(10)})  # 100 bytes each
    ws = Workspace(max_bytes=350, bytes_setting="workspaceMaxBytes")
    ws.set_folders([str(tmp_path)])
    assert len(ws.files()) == 3 and ws.stats()["bytes"] == 300
    assert len(opened) == 3
    assert ws.stats()["limited"] and ws.stats()["skipped"]["over_limit"] == 7
    message = ws.limit_message() or ""
    assert "of text" in message and "set workspaceMaxBytes to read more" in message


def test_within_the_bounds_nothing_is_limited(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "A = 1\n", "b.py": "B = 2\n"})
    ws = Workspace()
    ws.set_folders([str(tmp_path)])
    assert len(ws.files()) == 2
    assert ws.stats()["limited"] is False and ws.limit_message() is None


SKIPPED: dict[str, str | bytes] = {
    "keep.py": "KEEP = 1\n",
    "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "data.bin": b"valid utf-8 \x00 but a NUL byte",
    "latin1.txt": "caf\xe9\n".encode("latin-1"),
    "big.py": "x = 1\n" * 1000,  # 6,000 bytes
    "secret.py": "TOKEN = 'x'\n",
}


def test_binary_large_and_unreadable_files_are_skipped(
    tmp_path: Path, opened: list[str], monkeypatch
) -> None:
    write(tmp_path, SKIPPED)
    counting_open = workspace_module.open  # type: ignore[attr-defined]

    def refusing_open(file, *args, **kwargs):
        if str(file).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", file)
        return counting_open(file, *args, **kwargs)

    monkeypatch.setattr(workspace_module, "open", refusing_open, raising=False)
    ws = Workspace(max_file_bytes=4096)
    ws.set_folders([str(tmp_path)])
    assert rel_files(ws, tmp_path) == ["keep.py"]
    skipped = ws.stats()["skipped"]
    assert (skipped["binary"], skipped["large"], skipped["unreadable"]) == (3, 1, 1)
    assert not any(p.endswith("big.py") for p in opened)  # its size said enough
    assert ws.stats()["limited"] is False


def test_git_ignored_files_are_not_read(tmp_path: Path, opened: list[str]) -> None:
    git_init(tmp_path)
    write(
        tmp_path,
        {
            ".gitignore": "*.log\nsecret/\n",
            "a.py": "A = 1\n",
            "run.log": "noise\n",
            "secret/key.py": "KEY = 1\n",
            "pkg/b.py": "B = 2\n",
        },
    )
    subprocess.run(["git", "-C", str(tmp_path), "add", "a.py"], check=True)  # tracked and not
    ws = Workspace()
    ws.set_folders([str(tmp_path)])
    assert rel_files(ws, tmp_path) == [".gitignore", "a.py", "pkg/b.py"]
    assert not any("secret" in p or p.endswith(".log") for p in opened)


def test_a_folder_its_enclosing_repository_ignores_whole_is_walked(tmp_path: Path) -> None:
    git_init(tmp_path)
    write(tmp_path, {".gitignore": "vendor/\n", "vendor/lib/.gitignore": "*.tmp\n"})
    write(tmp_path, {"vendor/lib/a.py": "A = 1\n", "vendor/lib/b.tmp": "x\n"})
    ws = Workspace()
    ws.set_folders([str(tmp_path / "vendor" / "lib")])
    assert rel_files(ws, tmp_path / "vendor" / "lib") == ["a.py"]
    assert ws.stats()["listing"] == "walk"


def test_without_git_the_walk_honors_gitignore_files_and_skips_hidden_and_junk(
    tmp_path: Path, opened: list[str]
) -> None:
    write(
        tmp_path,
        {
            ".gitignore": "*.log\ngenerated/\n",
            "a.py": "A = 1\n",
            "run.log": "noise\n",
            "generated/g.py": "G = 1\n",
            "sub/.gitignore": "local_*.py\n",
            "sub/local_x.py": "L = 1\n",
            "sub/kept.py": "K = 1\n",
            "node_modules/dep/index.js": "module.exports = 1\n",
            "__pycache__/a.cpython-311.pyc": b"\x00\x01",
            ".venv/lib/site.py": "S = 1\n",
            ".hidden/h.py": "H = 1\n",
            ".env": "PASSWORD=x\n",
        },
    )
    ws = Workspace()
    ws.set_folders([str(tmp_path)])
    assert rel_files(ws, tmp_path) == ["a.py", "sub/kept.py"]
    assert sorted(os.path.relpath(p, tmp_path) for p in opened) == [
        ".gitignore",
        "a.py",
        "sub/.gitignore",
        "sub/kept.py",
    ]
    assert ws.stats()["skipped"]["ignored"] >= 6


@pytest.mark.parametrize("git", [False, True], ids=["walk", "git"])
def test_nothing_outside_the_folders_is_read_through_symlinks(
    tmp_path: Path, opened: list[str], git: bool
) -> None:
    folder, outside = tmp_path / "ws", tmp_path / "outside"
    write(outside, {"secret.py": "SECRET = 1\n", "deep/more.py": "MORE = 1\n"})
    write(folder, {"a.py": "A = 1\n"})
    if git:
        git_init(folder)
    (folder / "link.py").symlink_to(outside / "secret.py")
    (folder / "linkdir").symlink_to(outside)
    (folder / "alias.py").symlink_to(folder / "a.py")  # inside: read as a.py only
    ws = Workspace()
    ws.set_folders([str(folder)])
    assert rel_files(ws, folder) == ["a.py"]
    assert not any(p.startswith(str(outside)) for p in opened)
    assert ws.stats()["skipped"]["outside"] == (2 if git else 1)  # (git lists linkdir itself)
    assert not ws.contains(str(folder / "link.py"))
    assert not ws.contains(str(outside / "secret.py"))
    assert ws.contains(str(folder / "a.py"))
    ws.file_changed(str(folder / "link.py"))
    ws.file_changed(str(outside / "secret.py"))
    ws.file_changed(str(folder / "linkdir" / "deep" / "more.py"))
    ws.file_changed(str(folder / ".." / "outside" / "secret.py"))
    assert rel_files(ws, folder) == ["a.py"]
    assert not any(p.startswith(str(outside)) for p in opened)


def test_file_changes_created_changed_deleted(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "A = 1\n", "pkg/b.py": "B = 2\n", "pkg/c.py": "C = 3\n"})
    ws = Workspace()
    ws.set_folders([str(tmp_path)])
    before = ws.files()
    (tmp_path / "a.py").write_text("A = 10\n")
    ws.file_changed(str(tmp_path / "a.py"))
    write(tmp_path, {"new.py": "N = 1\n", "node_modules/x.js": "x\n", "big.py": "#" * 300_000})
    for name in ("new.py", "node_modules/x.js", "big.py"):
        ws.file_changed(str(tmp_path / name))
    ws.file_changed(str(tmp_path / "pkg"))  # a folder: not a file
    files = ws.files()
    assert files[str(tmp_path / "a.py")] == "A = 10\n"
    assert rel_files(ws, tmp_path) == ["a.py", "new.py", "pkg/b.py", "pkg/c.py"]
    assert before[str(tmp_path / "a.py")] == "A = 1\n"  # a snapshot stays as it was
    assert ws.stats()["bytes"] == sum(len(t) for t in files.values())
    (tmp_path / "new.py").unlink()
    ws.file_deleted(str(tmp_path / "new.py"))
    ws.file_deleted(str(tmp_path / "pkg"))  # a folder: everything under it
    ws.file_deleted("/elsewhere/a.py")
    assert rel_files(ws, tmp_path) == ["a.py"]
    assert ws.stats()["bytes"] == len("A = 10\n")


def test_a_file_changed_while_the_scan_reads_is_read_again(tmp_path: Path, monkeypatch) -> None:
    write(tmp_path, {"a.py": "A = 1\n", "b.py": "B = 1\n"})
    ws = Workspace()
    real_read = ws._read

    def read(path: str, room: int):
        found = real_read(path, room)
        if path.endswith("a.py") and found[0] == "A = 1\n":  # read; then it changes on disk
            (tmp_path / "a.py").write_text("A = 2\n")
            ws.file_changed(path)
        return found

    monkeypatch.setattr(ws, "_read", read)
    ws.set_folders([str(tmp_path)])
    assert ws.files()[str(tmp_path / "a.py")] == "A = 2\n"


def test_a_new_git_ignored_file_is_not_read(tmp_path: Path) -> None:
    git_init(tmp_path)
    write(tmp_path, {".gitignore": "*.log\n", "a.py": "A = 1\n"})
    ws = Workspace()
    ws.set_folders([str(tmp_path)])
    write(tmp_path, {"run.log": "noise\n", "b.py": "B = 1\n", ".git/HEAD2": "x\n"})
    for name in ("run.log", "b.py", ".git/HEAD2"):
        ws.file_changed(str(tmp_path / name))
    assert rel_files(ws, tmp_path) == [".gitignore", "a.py", "b.py"]


def test_a_new_file_past_the_bound_is_not_read(tmp_path: Path, opened: list[str]) -> None:
    write(tmp_path, {"a.py": "A = 1\n", "b.py": "B = 1\n"})
    ws = Workspace(max_files=2)
    ws.set_folders([str(tmp_path)])
    assert ws.limit_message() is None
    write(tmp_path, {"c.py": "C = 1\n"})
    ws.file_changed(str(tmp_path / "c.py"))
    assert rel_files(ws, tmp_path) == ["a.py", "b.py"]
    assert not any(p.endswith("c.py") for p in opened)
    assert ws.stats()["limited"] and "more than 2 files" in (ws.limit_message() or "")


def test_a_newer_set_folders_wins_over_a_scan_still_reading(tmp_path: Path, monkeypatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write(first, {f"f{i}.py": "F = 1\n" for i in range(3)})
    write(second, {"s.py": "S = 1\n"})
    ws = Workspace()
    real_read = ws._read
    calls = []

    def read(path: str, room: int):
        calls.append(path)
        if len(calls) == 1:  # the editor changed folders while the first scan reads
            ws.set_folders([str(second)])
        return real_read(path, room)

    monkeypatch.setattr(ws, "_read", read)
    ws.set_folders([str(first)])
    assert rel_files(ws, tmp_path) == ["second/s.py"]
    assert ws.folders == (str(second),)


def test_paths_as_shown_to_the_model(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    write(one, {"pkg/a.py": "A = 1\n"})
    write(two, {"b.py": "B = 1\n"})
    ws = Workspace()
    ws.set_folders([str(one)])
    assert ws.relative(str(one / "pkg" / "a.py")) == "pkg/a.py"
    assert ws.relative("/somewhere/else/c.py") == "c.py"
    ws.set_folders([str(one), str(two)])
    assert ws.relative(str(two / "b.py")) == "two/b.py"
    assert len(ws.files()) == 2


def test_a_folder_reached_through_a_symlink_keeps_the_editors_paths(tmp_path: Path) -> None:
    real = tmp_path / "real"
    write(real, {"a.py": "A = 1\n"})
    (tmp_path / "alias").symlink_to(real)
    ws = Workspace()
    ws.set_folders([str(tmp_path / "alias")])
    assert list(ws.files()) == [str(tmp_path / "alias" / "a.py")]
    assert ws.contains(str(real / "a.py")) and ws.contains(str(tmp_path / "alias" / "a.py"))
    assert ws.relative(str(real / "a.py")) == "a.py"


def test_a_repositorys_own_git_config_runs_no_program(tmp_path: Path) -> None:
    """A workspace's .git/config can name programs for git to run while it lists files
    (core.fsmonitor) or after (hooks): reading the workspace runs none of them."""
    repo, marker = tmp_path / "repo", tmp_path / "ran"
    repo.mkdir()
    git_init(repo)
    write(repo, {"a.py": "A = 1\n"})
    hook = tmp_path / "monitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    subprocess.run(["git", "-C", str(repo), "config", "core.fsmonitor", str(hook)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "a.py"], check=True)
    marker.unlink(missing_ok=True)  # (git add may have run it)
    ws = Workspace()
    ws.set_folders([str(repo)])
    ws.file_changed(str(repo / "b.py"))
    assert rel_files(ws, repo) == ["a.py"] and not marker.exists()
