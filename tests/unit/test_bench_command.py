"""`spec-lsp bench NAME ARGS...`: every benchmark runs from the one command, with its own
arguments."""

from __future__ import annotations

import pytest

from spec_lsp import cli
from spec_lsp.bench.command import MODULES


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_benchmark_answers_help_under_its_name(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["bench", name, "--help"]) == 0
    assert f"spec-lsp bench {name}" in capsys.readouterr().out


def test_an_unknown_benchmark_names_the_known_ones() -> None:
    with pytest.raises(SystemExit, match="kv-shift"):
        cli.main(["bench", "kvshift"])
