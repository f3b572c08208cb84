"""Over stdio with Qwen2.5-Coder-1.5B: where a name is made at run time, the guide lets the model
write it.

Jedi's completions leave out attributes made at run time, and a guide that took such a set as
complete forbade the name the file uses: the model wrote `cfg.__getattribute__(...)`,
`opts.__dict__['retries']` and `Plugin.__subclasses__()`. Each file here is the unit suite's case
of one of those shapes (tests/unit/test_guide_soundness_python.py), cut right after the last
`receiver.`; the person reads until the analysis of the file is done, then asks (Invoked), the
guide on.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from spec_lsp import models
from tests.e2e.conftest import INVOKED, inline, open_doc
from tests.e2e.test_context import begin
from tests.e2e.test_guide import analysed
from tests.unit import test_guide_soundness_python as soundness

QWEN = models.installed_path("qwen2.5-coder-1.5b")
# (skipped before the fixture starts a server: one started without its model never initializes,
# and the client's shutdown then waits on it)
pytestmark = [
    pytest.mark.real,
    pytest.mark.qwen,
    pytest.mark.skipif(
        QWEN is None, reason="Qwen2.5-Coder-1.5B not installed: spec-lsp models pull"
    ),
]
SERVER = [sys.executable, "-m", "spec_lsp.cli", "serve", "--model", str(QWEN)]

# the unit suite's cases of the three shapes, through the real server and model
SHAPES = (
    "instance_attribute_set_outside_the_class",
    "setattr_in_init_used_above",
    "class_attribute_set_after_the_class",
)
CASES = [case for case in soundness.CASES if case.id in SHAPES]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_name_made_at_run_time_is_written_with_the_guide_on(client, tmp_path: Path):
    await begin(client, tmp_path, guide=True, contextTokens=0, gateThreshold=0)
    assert len(CASES) == len(SHAPES)
    written = {}
    for n, case in enumerate(CASES, start=1):
        text = soundness.src(case.text)
        uri = (tmp_path / f"{case.id}.py").as_uri()
        open_doc(client, text, uri=uri)
        await analysed(client, n, timeout=240)  # (the table is there: the guide is in play)
        lines = text.split("\n")
        result = await inline(client, len(lines) - 1, len(lines[-1]), uri=uri, kind=INVOKED)
        assert result is not None and result.items
        first = re.match(r"\w*", str(result.items[0].insert_text))
        written[case.name] = first.group(0) if first else ""
    assert written == {case.name: case.name for case in CASES}
