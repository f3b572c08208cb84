"""The unit tests' own settings: a loaded engine does not warm Jedi up here unless the test asks
for it, and Jedi runs on the analysis thread, where tests patch stand-ins in (the process itself:
test_guide_process.py; the servers of the end-to-end tests run it). A Jedi run left going (a
Python document opened with the guide on, by default) would run beside the next tests, and Jedi
raises the interpreter's recursion limit while it runs, which hypothesis reports as a test
changing it: tests/conftest.py stops every test's analyses with it."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _jedi_on_the_thread_and_cold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPEC_LSP_JEDI_WARM_UP", "0")  # (the tests of the warm-up turn it on)
    monkeypatch.setenv("SPEC_LSP_ANALYSIS_PROCESS", "0")
