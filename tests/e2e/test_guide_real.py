"""Over stdio with Qwen2.5-Coder-1.5B: the guide turns a name that does not exist into the
file's own.

The place was found by rule, not by hand: the first of `spec-lsp bench names`' cases (its
order) where the model without the guide wrote a name that is not a member and with it the
name the file uses, among those whose member is defined above the line (the person writes the
file's last line: what comes below is not written yet; the first such case, argparse's
`self._get_args`, is defined below its use). h11's `Connection.states`: `return
dict(self._cstate.states)`; without the guide the model writes `self._states`, which the class
does not have. The document is h11/_connection.py cut right after that `self.` (nothing after
it), at its own path, the package its workspace folder; the person reads until the analysis is
ready, then asks (Invoked).
"""

from __future__ import annotations

import re
import sys
import sysconfig
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from spec_lsp import models
from tests.e2e.conftest import INVOKED, inline, open_doc
from tests.e2e.test_context import begin
from tests.e2e.test_guide import analysed

pytestmark = [pytest.mark.real, pytest.mark.qwen]

PACKAGE = Path(sysconfig.get_paths()["purelib"]) / "h11"
LINE = 215  # (1-based) `        return dict(self._cstate.states)`
CUT = "        return dict(self."
QWEN = models.installed_path("qwen2.5-coder-1.5b")
SERVER = [sys.executable, "-m", "spec_lsp.cli", "serve", "--model", str(QWEN)]


def document() -> str:
    """h11/_connection.py up to and including the `self.` on LINE."""
    lines = (PACKAGE / "_connection.py").read_text(encoding="utf-8").split("\n")
    assert lines[LINE - 1].startswith(CUT), "this h11 moved the line"
    return "\n".join([*lines[: LINE - 1], CUT])


async def name_asked(client: LanguageClient, *, guide: bool) -> str:
    if QWEN is None:
        pytest.skip("Qwen2.5-Coder-1.5B not installed: run `spec-lsp models pull`")
    await begin(client, PACKAGE, guide=guide, contextTokens=0, gateThreshold=0)
    text, uri = document(), (PACKAGE / "_connection.py").as_uri()
    open_doc(client, text, uri=uri)
    if guide:
        await analysed(client, 1, timeout=240)
    result = await inline(client, LINE - 1, len(CUT), uri=uri, kind=INVOKED)
    assert result is not None and result.items
    return re.match(r"\w*", str(result.items[0].insert_text)).group(0)  # type: ignore[union-attr]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_without_the_guide_the_model_writes_a_name_that_does_not_exist(client):
    assert await name_asked(client, guide=False) == "_states"  # (not vacuous)


@pytest.mark.asyncio
async def test_the_guide_writes_the_member_the_file_uses(client):
    assert await name_asked(client, guide=True) == "_cstate"
