"""Over stdio (fake backend): names that exist. A receiver whose class another module of the
workspace defines gets a member that exists where the model invents one; a receiver the
analysis cannot resolve is left alone; an analysis still running leaves the answer unguided
and on time.

The fake model continues its corpus: after `self.` it writes `x = x` or `y = y`; the class
Shape has neither."""

from __future__ import annotations

import asyncio
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import INVOKED, inline, open_doc, server_config, stats, wait_ready
from tests.e2e.test_context import begin

SHAPES = (
    "class Shape:\n"
    "    def __init__(self, width, height):\n"
    "        self.width = width\n        self.height = height\n\n"
    "    def area(self):\n        return self.width * self.height\n"
)
MEMBERS = ("width", "height", "area")
RESOLVED = "from pkg.shapes import Shape\n\n\ndef grow(self: Shape, by):\n    return self."
UNRESOLVED = "def grow(self, by):\n    return self."


def workspace() -> Path:
    root = Path(tempfile.mkdtemp(prefix="spec-lsp-guide-"))
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "shapes.py").write_text(SHAPES)
    return root


FOLDER = workspace()


def first_name(text: str) -> str:
    return re.match(r"\w*", text).group(0)  # type: ignore[union-attr]


async def analysed(client: LanguageClient, n: int, timeout: float = 60.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (numbers := await stats(client)).guide.analyses < n:
        assert loop.time() < deadline, "the file was never analysed"
        await asyncio.sleep(0.05)
    return numbers


async def ask(client: LanguageClient, name: str, text: str) -> tuple[str, float]:
    uri = (FOLDER / "pkg" / name).as_uri()
    open_doc(client, text, uri=uri)
    return uri, time.monotonic()


async def complete_at_end(client: LanguageClient, uri: str, text: str) -> str:
    lines = text.split("\n")
    result = await inline(client, len(lines) - 1, len(lines[-1]), uri=uri, kind=INVOKED)
    assert result is not None and result.items
    return str(result.items[0].insert_text)


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient):
    await begin(lsp_client, FOLDER, gateThreshold=0)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config(SPEC_LSP_ANALYSIS_DELAY_MS="20000"))
async def late_client(lsp_client: LanguageClient):
    await begin(lsp_client, FOLDER, gateThreshold=0)
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_member_that_exists_and_an_unresolved_receiver_left_alone(client: LanguageClient):
    uri, _ = await ask(client, "main.py", RESOLVED)
    await analysed(client, 1)
    text = await complete_at_end(client, uri, RESOLVED)
    assert first_name(text) in MEMBERS, text
    numbers = await stats(client)
    assert numbers.guide.masked >= 1 and numbers.guide.changed >= 1

    uri, _ = await ask(client, "other.py", UNRESOLVED)
    await analysed(client, 2)
    text = await complete_at_end(client, uri, UNRESOLVED)
    assert first_name(text) not in MEMBERS, text  # (the fake model's own: not constrained)
    assert (await stats(client)).guide.masked == numbers.guide.masked


@pytest.mark.asyncio
async def test_a_late_analysis_leaves_the_answer_unguided_and_on_time(late_client: LanguageClient):
    client = late_client
    await wait_ready(client)
    uri, opened = await ask(client, "late.py", RESOLVED)
    text = await complete_at_end(client, uri, RESOLVED)
    assert time.monotonic() - opened < 10  # (the analysis publishes after 20 s)
    assert first_name(text) not in MEMBERS, text
    numbers = await stats(client)
    assert numbers.guide.unprepared >= 1 and numbers.guide.masked == 0
