"""The command line: the bench takes only the flags it honors, and honors them; `--drafter`
lists every drafter."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import command, common, sources
from spec_lsp import cli


@pytest.mark.parametrize(
    "flag", ["--drafter=ngram", "--temperature=0.5", "--draft-policy=fixed", "--draft-min=2"]
)
def test_the_bench_refuses_a_setting_it_would_ignore(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # it runs every drafter, policy and temperature itself: such a flag would change nothing
    with pytest.raises(SystemExit):
        command.build_parser().parse_args([flag])
    assert "unrecognized arguments" in capsys.readouterr().err


@pytest.mark.parametrize(("seed", "expected"), [(None, [0, 1, 2]), (7, [7, 8, 9])])
def test_bench_reps_sample_from_the_given_seed(seed: int | None, expected: list[int]) -> None:
    argv = [f"--seed={seed}"] if seed is not None else []
    settings = cli.settings_from_args(command.build_parser().parse_args(argv))
    assert [common.rep_seed(settings, rep) for rep in range(3)] == expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [([], 48), (["--quick"], 32), (["--max-tokens=96"], 96), (["--quick", "--max-tokens=8"], 8)],
)
def test_bench_generations_are_as_long_as_asked(
    argv: list[str], expected: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []

    def fake_run(settings: object, prompts: object, max_tokens: int, *rest: object) -> str:
        seen.append(max_tokens)
        return ""

    monkeypatch.setattr(sources, "run", fake_run)
    assert command.main(["--part=sources", f"--out={tmp_path}", *argv]) == 0
    assert seen == [expected]


def test_bench_rejects_a_generation_of_no_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        command.build_parser().parse_args(["--max-tokens=0"])
    assert "expected a whole number >= 1" in capsys.readouterr().err


def test_the_drafter_flag_offers_every_drafter_the_settings_know() -> None:
    args = cli.build_parser().parse_args(["complete", "a.py:1:1", "--drafter=workspace"])
    assert args.drafter == "workspace"
    args = cli.build_parser().parse_args(["complete", "a.py:1:1", "--drafter=auto"])
    assert args.drafter == "auto"
