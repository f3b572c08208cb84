"""A request's way through the engine, traced call by call: each module on it is entered from at
most two others, so that a request is a pipeline and not a module visited from all sides.

The services every step may use are left out: the model (`engine/backends/`), the token counter
(`text_tokens`) and the engine's types. The way is traced in process (a file prefix, a context
block and the guide's table in place) and against a llama-server stub."""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, build_engine
from tests.e2e.remote_servers import Stub

SERVICES = (
    "spec_lsp.engine.backends.",
    "spec_lsp.engine.types",
    "spec_lsp.engine.local.text_tokens",
)
SHAPES = "def polygon_area(points):\n    return 0.0\n"
TEXT = "from shapes import polygon_area\n\n" + "".join(
    f"def f{i}(x):\n    return x + {i}\n\n" for i in range(40)
)
CUT = TEXT.index("return x + 20")
REQUEST = CompletionRequest(
    TEXT[:CUT],
    TEXT[CUT:],
    document_id="file:///m.py",
    file_name="m.py",
    language="python",
    invoked=True,
)


def entered_from(run: Callable[[], Any]) -> dict[str, set[str]]:
    """Per spec_lsp module entered while `run` runs: the other modules it was entered from."""
    callers: dict[str, set[str]] = defaultdict(set)
    stack: list[str | None] = []

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if not module.startswith("spec_lsp"):  # (a library's frames keep the caller)
                stack.append(stack[-1] if stack else None)
                return
            caller = stack[-1] if stack else None
            if caller is not None and caller != module:
                callers[module].add(caller)
            stack.append(module)
        elif event == "return" and stack:
            stack.pop()

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return callers


def hubs(callers: dict[str, set[str]]) -> dict[str, list[str]]:
    return {
        module: sorted(came)
        for module, came in callers.items()
        if len(came) > 2 and not module.startswith(SERVICES)
    }


def opened(settings: Settings) -> Any:
    engine = build_engine(settings, backend="fake")
    engine.load()
    engine.document_changed("file:///shapes.py", SHAPES)
    engine.document_changed("file:///m.py", TEXT)
    engine.document_opened(
        CompletionRequest("", TEXT, document_id="file:///m.py", file_name="m.py")
    )
    for _ in range(200):  # the block chosen and the file prefix evaluated, as while reading
        if not engine.idle_work:
            break
        engine.idle_step(CancelToken())
    if engine.stores.analyses.enabled:  # (in process: the guide's table, on the way)
        assert engine.stores.analyses.wait("file:///m.py", 120)
    return engine


def test_in_process_each_module_is_entered_from_at_most_two_others():
    engine = opened(Settings(drafter="ngram", precompute=False, multiline="never"))
    try:
        callers = entered_from(lambda: engine.complete(REQUEST, CancelToken()))
    finally:
        engine.close()
    # the way it is meant to take (else the trace proves nothing)
    for module in (
        "local.stage",
        "local.prompt_tokens",
        "local.file_prefix",
        "finishing.postprocess",
        "decode.speculative",
        "guide.monitor",
    ):
        assert f"spec_lsp.engine.{module}" in callers, module
    assert callers["spec_lsp.engine.finishing.postprocess"] == {"spec_lsp.engine.answer"}
    assert hubs(callers) == {}


@pytest.fixture
def llama_server():
    stub = Stub()
    stub.llama_server, stub.chars_per_token, stub.logprob = True, 4.0, -0.1
    yield stub
    stub.close()


def test_on_a_server_each_module_is_entered_from_at_most_two_others(llama_server):
    engine = opened(
        Settings(engine="remote", remote_url=llama_server.url, precompute=False, multiline="never")
    )
    try:
        callers = entered_from(lambda: engine.complete(REQUEST, CancelToken()))
    finally:
        engine.close()
    assert llama_server.infills or llama_server.completions  # (the way went to the server)
    for module in ("remote.stage", "remote.ask", "remote.stream", "finishing.postprocess"):
        assert f"spec_lsp.engine.{module}" in callers, module
    assert hubs(callers) == {}


def test_a_module_entered_from_three_others_is_found():
    """The check itself: a third caller of postprocess is reported."""
    callers = {
        "spec_lsp.engine.finishing.postprocess": {"spec_lsp.engine.answer", "a", "b"},
        "spec_lsp.engine.backends.llama": {"x", "y", "z"},
    }
    assert hubs(callers) == {
        "spec_lsp.engine.finishing.postprocess": ["a", "b", "spec_lsp.engine.answer"]
    }
