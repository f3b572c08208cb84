"""The unit tests' own fixture: the guide's analysis threads a test's engines start stop with
the test. A Jedi run left going (a Python document opened with the guide on, by default) runs
beside the next tests, and Jedi raises the interpreter's recursion limit while it runs, which
hypothesis reports as a test changing it. For the same reason a loaded engine does not warm Jedi
up here unless the test asks for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spec_lsp.engine.guide.analyses import Analyses


@pytest.fixture(autouse=True)
def _analyses_stop_with_the_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("SPEC_LSP_JEDI_WARM_UP", "0")  # (the tests of the warm-up turn it on)
    # Jedi on the analysis thread, where the tests patch stand-ins in (the process itself:
    # test_guide_process.py; the servers of the end-to-end tests run it)
    monkeypatch.setenv("SPEC_LSP_ANALYSIS_PROCESS", "0")
    made: list[Analyses] = []
    init = Analyses.__init__

    def recorded(self: Analyses) -> None:
        init(self)
        made.append(self)

    monkeypatch.setattr(Analyses, "__init__", recorded)
    yield
    for analyses in made:
        analyses.close()
