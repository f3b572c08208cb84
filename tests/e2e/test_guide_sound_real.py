"""Over stdio with Qwen2.5-Coder-1.5B: where a name is made at run time, the guide lets the model
write it.

Jedi's completions leave out attributes made at run time, and a guide that took such a set as
complete forbade the name the file uses: the model wrote `cfg.__getattribute__(...)`,
`opts.__dict__['retries']` and `Plugin.__subclasses__()`. Each file here is one of those shapes,
the right name used a few lines above, cut right after the last `receiver.`; the person reads
until the analysis of the file is done, then asks (Invoked), the guide on.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from spec_lsp import models
from tests.e2e.conftest import INVOKED, inline, open_doc
from tests.e2e.test_context import begin
from tests.e2e.test_guide import analysed

pytestmark = [pytest.mark.real, pytest.mark.qwen]

QWEN = models.installed_path("qwen2.5-coder-1.5b")
SERVER = [sys.executable, "-m", "spec_lsp.cli", "serve", "--model", str(QWEN)]

# (file name, text cut after the last `.`, the name the file uses there)
CASES = [
    (
        "settings.py",
        """
        import time


        class Config:
            def __init__(self):
                self.name = "app"


        cfg = Config()
        cfg.timeout_seconds = 30
        print(cfg.name, cfg.timeout_seconds)
        time.sleep(cfg.""",
        "timeout_seconds",
    ),
    (
        "options.py",
        """
        class Options:
            def __init__(self, **kwargs):
                for key, value in kwargs.items():
                    setattr(self, key, value)


        opts = Options(retries=3)
        print("retries:", opts.retries)
        for attempt in range(opts.""",
        "retries",
    ),
    (
        "plugins.py",
        """
        class Plugin:
            def run(self):
                pass


        Plugin.registry = {}
        Plugin.registry["base"] = Plugin
        print(len(Plugin.""",
        "registry",
    ),
]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_name_made_at_run_time_is_written_with_the_guide_on(client, tmp_path: Path):
    if QWEN is None:
        pytest.skip("Qwen2.5-Coder-1.5B not installed: run `spec-lsp models pull`")
    await begin(client, tmp_path, guide=True, contextTokens=0, gateThreshold=0)
    written = {}
    for n, (name, text, expected) in enumerate(CASES, start=1):
        text = textwrap.dedent(text).lstrip("\n")
        uri = (tmp_path / name).as_uri()
        open_doc(client, text, uri=uri)
        await analysed(client, n, timeout=240)  # (the table is there: the guide is in play)
        lines = text.split("\n")
        result = await inline(client, len(lines) - 1, len(lines[-1]), uri=uri, kind=INVOKED)
        assert result is not None and result.items
        first = re.match(r"\w*", str(result.items[0].insert_text))
        written[expected] = first.group(0) if first else ""
    assert written == {expected: expected for _name, _text, expected in CASES}
