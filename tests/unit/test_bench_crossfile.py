"""The cross-file benchmark's own logic: which lines it asks at, what goes in front of them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bench.crossfile import (
    Answer,
    Use,
    ask_spec,
    choose,
    definitions,
    excerpt,
    render,
    repository,
    same_line,
    uses,
    whole_lines,
)
from bench.in_process import Server
from bench.places import emptied
from spec_lsp.config import Settings
from spec_lsp.engine import build_engine
from spec_lsp.prompts import fim

MODELS = '''\
"""Models."""

TIMEOUT = 5


class Request:
    def __init__(self, method, url, timeout=TIMEOUT):
        self.method, self.url = method, url


@staticmethod
def build_request(method, url):
    return Request(method, url)


def quote(text):
    return text


def unused_helper():
    return 1
'''

CLIENT = '''\
"""The client."""

from .models import (
    Request,
    build_request,
)
from pkg.models import quote, TIMEOUT
from pkg.models import unused_helper as helper
from . import models


class Client:
    def send(self, method, url):
        request = Request(method, url, timeout=self.timeout)
        return self.transport.handle(request)

    def get(self, url):
        # build_request makes the request
        return self.send_built(build_request("GET", url))

    def head(self, url: TIMEOUT):
        return self.send("HEAD", quote(url))

    def other(self, url):
        quoted = quote(url)
        return helper(quoted)
'''


def package(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "models.py").write_text(MODELS)
    (root / "client.py").write_text(CLIENT)
    return root


def test_a_line_uses_a_name_its_file_mentions_only_in_its_imports(tmp_path):
    found = uses(package(tmp_path))
    # Request: once, in a statement of its own. build_request: also named in a comment; quote:
    # on two lines; TIMEOUT: an annotation, a hint not a use; helper: imported under an alias
    assert found == [
        Use(
            "pkg",
            "pkg/client.py",
            13,
            "Request",
            "pkg/models.py",
            "request = Request(method, url, timeout=self.timeout)",
        )
    ]


def test_no_line_of_a_name_mentioned_elsewhere_in_a_docstring_or_string(tmp_path):
    root = package(tmp_path)
    text = (root / "client.py").read_text().replace('"""The client."""', '"""Sends a Request."""')
    (root / "client.py").write_text(text)
    assert uses(root) == []


def test_no_line_that_opens_with_the_name_or_spans_lines(tmp_path):
    root = package(tmp_path)
    client = (root / "client.py").read_text()
    opening = "        Request(method, url, timeout=self.timeout).send()"
    (root / "client.py").write_text(
        client.replace("        request = Request(method, url, timeout=self.timeout)", opening)
    )
    assert uses(root) == []
    spanning = (
        "        request = Request(\n            method, url, timeout=self.timeout\n        )"
    )
    (root / "client.py").write_text(
        client.replace("        request = Request(method, url, timeout=self.timeout)", spanning)
    )
    assert uses(root) == []
    # a statement of its own, without a comment of its own (a comment line above is no matter)
    assert whole_lines("x = f(\n  1)\ny = 2  # two\n# three\nz = 3\nif z:\n    w = 4\n") == {
        4,
        5,
        6,
    }


def test_lines_are_chosen_the_same_for_a_seed_spread_over_packages_and_files():
    found = [
        Use(pkg, f"{pkg}/m{i % 3}.py", i, f"name{i}", f"{pkg}/d.py", f"x = name{i}(1, 2, 3)")
        for pkg in ("a", "b")
        for i in range(12)
    ]
    chosen = choose(found, 8, seed=1)
    assert chosen == choose(found, 8, seed=1) and len(chosen) == 8
    assert [u.package for u in chosen] == ["a", "b"] * 4
    assert max(sum(u.path == p for u in chosen) for p in {u.path for u in chosen}) <= 2
    assert choose(found, 8, seed=2) != chosen


def test_the_defining_module_goes_in_front_with_its_definition_whole():
    tree = ast.parse(MODELS)
    span = definitions(tree)["build_request"]
    assert MODELS.split("\n")[span[0]] == "@staticmethod"  # decorators belong to it
    count = lambda text: max(1, len(text.split()))  # noqa: E731  (a word a token, a line 1)
    shown = excerpt(MODELS, span, 9, count)  # 7 for the definition, a blank line either side
    assert (
        shown
        == "\n@staticmethod\ndef build_request(method, url):\n    return Request(method, url)\n\n"
    )
    assert excerpt(MODELS, span, 1000, count) == MODELS
    assert excerpt(MODELS, span, 4, count) == "@staticmethod\ndef build_request(method, url):\n"
    segments = repository("pkg", "pkg/models.py", shown)
    prompt = fim.render(segments)
    assert prompt == "<|repo_name|>pkg\n<|file_sep|>pkg/models.py\n" + shown
    assert [s.special for s in segments] == [True, False, True, False]


def test_exact_is_the_first_line_trailing_blanks_aside():
    assert same_line("x = f(1)  \nmore", "x = f(1)")
    assert not same_line(" x = f(1)", "x = f(1)") and not same_line("x = f(2)", "x = f(1)")


def test_the_report_sets_each_variant_with_context_against_its_own_without():
    use = Use("pkg", "pkg/a.py", 4, "f", "pkg/b.py", "y = f(x) | 1")
    results = [
        {
            "use": use.__dict__,
            "answers": [
                Answer("plain", exact=i == 0, seconds=2.0).__dict__,
                Answer("plain+module", exact=True, seconds=6.0, context_tokens=900).__dict__,
            ],
        }
        for i in range(3)
    ]
    table = render(results, ["plain", "plain+module"], "# head")
    assert "| plain | 1/3 |  | 2.00 |  | 0 |" in table
    assert "| plain+module | 3/3 | 3.00x | 6.00 | 3.00x | 900 |" in table
    assert "`y = f(x) \\| 1`" in table


@pytest.mark.parametrize(
    ("variant", "open_at_ask", "folders_at_ask"),
    [
        ("spec-lsp", ["pkg/client.py"], []),
        ("spec-lsp+tab", ["pkg/client.py", "pkg/models.py"], []),
        ("spec-lsp+workspace", ["pkg/client.py"], ["pkg"]),
    ],
)
async def test_each_spec_lsp_ask_sees_its_variant_and_leaves_nothing_behind(
    tmp_path, variant, open_at_ask, folders_at_ask
):
    root = package(tmp_path)
    (use,) = uses(root)
    settings = Settings(precompute=False, file_prefix_tokens=0)
    engine = build_engine(settings, backend="fake")
    engine.load()
    server = Server(engine, settings)
    shown: set[str] = set()  # the documents the engine was told of and not told closed
    changed, closed, ask = engine.document_changed, engine.document_closed, server.ask
    engine.document_changed = lambda uri, text: (shown.add(uri), changed(uri, text))[1]  # type: ignore[method-assign]
    engine.document_closed = lambda uri: (shown.discard(uri), closed(uri))[1]  # type: ignore[method-assign]
    seen = {}

    async def asked(request, **kwargs):
        seen["open"], seen["folders"] = sorted(shown), list(engine.workspace_folders)
        return await ask(request, **kwargs)

    server.ask = asked  # type: ignore[method-assign]
    prefix, suffix, _ = emptied((root / "client.py").read_text(), use.line)
    try:
        answer = await ask_spec(server, use, variant, root, prefix, suffix, read_s=0.1)
        assert engine.parts.local.loaded is not None
        kept = engine.parts.local.loaded.target.tokens  # in the KV after the ask
    finally:
        server.close()
    assert seen["open"] == sorted((tmp_path / p).as_uri() for p in open_at_ask)
    assert seen["folders"] == [str(tmp_path / f) for f in folders_at_ask]
    assert answer.variant == variant and answer.prompt_tokens > 0 and answer.seconds > 0
    # the next ask comes to a server that has seen nothing
    assert shown == set() and engine.workspace_folders == [] and kept == []
