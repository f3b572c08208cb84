"""`spec-lsp bench NAME ARGS...`: every benchmark runs from the one command, with its own
arguments; the command runs them from a checkout, and says so where there is none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench import command
from bench.command import MODULES
from spec_lsp import benchmarks, cli


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_benchmark_answers_help_under_its_name(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert command.main([name, "--help"]) == 0
    assert f"spec-lsp bench {name}" in capsys.readouterr().out


def test_an_unknown_benchmark_names_the_known_ones() -> None:
    with pytest.raises(SystemExit, match="kv-shift"):
        command.main(["kvshift"])


def test_spec_lsp_bench_runs_the_checkouts_benchmarks() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spec_lsp.cli", "bench", "gate", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "spec-lsp bench gate" in done.stdout


def test_spec_lsp_bench_without_a_checkout_says_where_the_benchmarks_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        benchmarks, "CHECKOUT", tmp_path
    )  # an installed package: no benchmarks beside
    monkeypatch.chdir(tmp_path)  # nor here
    with pytest.raises(SystemExit, match="not installed with spec-lsp.*checkout"):
        cli.main(["bench", "places"])


def test_an_installed_spec_lsp_runs_the_benchmarks_of_the_checkout_it_is_run_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(benchmarks, "CHECKOUT", tmp_path)  # (installed: no benchmarks beside it)
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the repository
    assert cli.main(["bench", "gate", "--help"]) == 0
    assert "spec-lsp bench gate" in capfd.readouterr().out
