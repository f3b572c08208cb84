"""The places benchmark's own logic: where it asks, what it expects, how it reports."""

from __future__ import annotations

import pytest

from bench.in_process import Server
from bench.places import Ask, Typed, emptied, places, render, run_places, run_typing
from spec_lsp.config import Settings
from spec_lsp.engine import build_engine

TEXT = "\n".join(
    [f"# header {i}" for i in range(10)]
    + [f"    value_{i} = compute_something({i}, other={i})" for i in range(30)]
)


def test_a_place_is_its_line_emptied_to_the_indentation():
    prefix, suffix, expected = emptied(TEXT, 12)
    assert prefix.endswith("\n    ") and suffix.startswith("\n    value_3 =")
    assert expected == "value_2 = compute_something(2, other=2)"
    assert emptied(TEXT, 12, "val")[0].endswith("\n    val")


def test_places_are_code_lines_spread_through_the_file():
    chosen = places(TEXT, 5, seed=0)
    assert len(chosen) == 5 == len(set(chosen)) and all(10 <= i < 40 for i in chosen)
    assert max(chosen) - min(chosen) >= 20
    assert places(TEXT, 5, seed=0) == chosen  # the same places every run


def test_the_report_compares_first_and_later_asks_with_plain():
    asks = [
        Ask(
            "f.py",
            1,
            0,
            "x = 1",
            spec_s=2.0,
            spec_text="x = 1",
            prompt_tokens=100,
            prompt_evaluated=100,
            plain_s=1.0,
            plain_text="x = 2",
        ),
        Ask(
            "f.py",
            9,
            1,
            "y = 2",
            spec_s=0.5,
            spec_text="y = 2\nz",
            prompt_tokens=100,
            prompt_evaluated=25,
            cache="file_prefix",
            context_tokens=40,
            context_cached=30,
            read_s=15.0,
            plain_s=1.0,
            plain_text="y = 2",
        ),
    ]
    typing = [
        Typed("f.py", 3, 10, shown_while_typing=4, spec_after_pause_s=0.2, plain_after_pause_s=1.0)
    ]
    table = render(asks, typing, "# header")
    assert (
        "| a file's first ask | 1 | 2.00 |" in table and "| 2.00x | 100% | 0 | 0 | 1 / 0 |" in table
    )
    assert "| later places, after reading 15 s | 1 | 0.50 |" in table
    assert "| 0.50x | 25% | 1 | 40 (75%) | 1 / 1 |" in table
    assert "| 1 | 10 | 4 | 0.20 | 1.00 | 0.20x |" in table


# -- the server in process (bench/in_process.py), on the fake model ------------------------------
class StubPlain:
    """Plain llama-cpp-python's turn: only checks that the server is held meanwhile."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.turns = 0

    def complete(self, prefix: str, suffix: str) -> tuple[str, float]:
        assert self.server.scheduler.held  # nothing of spec-lsp's runs beside it
        self.turns += 1
        return "", 1.0


class Patient(Server):
    """Reads on until the server is quiet: a worker slowed by a loaded machine still finishes
    its prewarm (or the last answer's rest) before the ask, as it does on a free one."""

    async def read(self, seconds: float) -> None:
        await self.read_until_quiet(seconds, most_s=60.0)


def serve(prewarm: bool, server: type[Server] = Server) -> Server:
    settings = Settings(precompute=False, file_prefix_tokens=0)
    engine = build_engine(settings, backend="fake")
    engine.load()
    return server(engine, settings, prewarm=prewarm)


@pytest.mark.parametrize("prewarm", [True, False])
async def test_a_place_edited_then_read_is_prewarmed_as_the_server_does(prewarm):
    server = serve(prewarm, Patient)
    plain = StubPlain(server)
    try:
        asks = await run_places(server, plain, "textwrap.py", 3, seed=0, read_s=0.5)  # type: ignore[arg-type]
    finally:
        server.close()
    assert plain.turns == 3 and all(a.prompt_tokens > 100 for a in asks)
    later = [a.prompt_evaluated for a in asks[1:]]
    if prewarm:  # evaluated while the person read: the ask evaluates its last token only
        assert later == [1, 1]
    else:
        assert all(n > 50 for n in later)


async def test_typing_is_sent_as_vs_code_sends_it_and_the_pause_is_answered():
    server = serve(prewarm=True)
    plain = StubPlain(server)
    try:
        typed = await run_typing(server, plain, "textwrap.py", 1, 0.05, seed=0, read_s=0.5)  # type: ignore[arg-type]
    finally:
        server.close()
    (line,) = typed
    assert len(line.outcomes) == line.keys and line.outcomes[-1].startswith("pause:")
    assert line.spec_after_pause_s > 0 and line.plain_after_pause_s == 1.0
    counts = server.scheduler.counts
    assert counts["requests"] == line.keys  # one Automatic request a key
