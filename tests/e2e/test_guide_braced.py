"""Over stdio (fake backend): names that exist in a brace language. A TypeScript receiver whose
class another module of the workspace defines gets a member that exists where the model invents
one (its own or what every object has); a receiver whose type is not known is left alone; a Go receiver of a struct of the package
is guided the same way.

The fake model continues its corpus: after `self.` it writes `x = x` or `y = y`; the class
Shape has neither."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from spec_lsp.engine.guide.braced.resolve import OBJECT_JS
from tests.e2e.conftest import open_doc, server_config, stats
from tests.e2e.test_context import begin
from tests.e2e.test_guide import analysed, complete_at_end, first_name

SHAPES_TS = (
    "export class Shape {\n  constructor(public width: number, public height: number) {}\n\n"
    "  area(): number {\n    return this.width * this.height;\n  }\n}\n"
)
MEMBERS = ("width", "height", "area", *OBJECT_JS)  # (what every object has exists too)
RESOLVED_TS = (
    "import { Shape } from './shapes';\n\nexport function grow(by: number): number {\n"
    "  const self = new Shape(1, 2);\n  return self."
)
UNRESOLVED_TS = "export function grow(self, by: number): number {\n  return self."
SHAPES_GO = (
    "package shapes\n\ntype Shape struct {\n\twidth, height int\n}\n\n"
    "func (s *Shape) Area() int { return s.width * s.height }\n"
)
RESOLVED_GO = "package shapes\n\nfunc (self *Shape) Grow(by int) int {\n\treturn self."


def workspace() -> Path:
    root = Path(tempfile.mkdtemp(prefix="spec-lsp-guide-braced-"))
    (root / "src").mkdir()
    (root / "src" / "shapes.ts").write_text(SHAPES_TS)
    (root / "shapes").mkdir()
    (root / "shapes" / "shape.go").write_text(SHAPES_GO)
    return root


FOLDER = workspace()


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient):
    await begin(lsp_client, FOLDER, gateThreshold=0)
    yield
    await lsp_client.shutdown_session()


async def completed(client: LanguageClient, path: str, text: str, analyses: int) -> str:
    uri = (FOLDER / path).as_uri()
    open_doc(client, text, uri=uri)
    await analysed(client, analyses)
    return first_name(await complete_at_end(client, uri, text))


@pytest.mark.asyncio
async def test_typescript_and_go_members_that_exist_and_an_unknown_type_left_alone(
    client: LanguageClient,
):
    assert await completed(client, "src/main.ts", RESOLVED_TS, 1) in MEMBERS
    numbers = await stats(client)
    assert numbers.guide.masked >= 1 and numbers.guide.changed >= 1

    name = await completed(client, "src/other.ts", UNRESOLVED_TS, 2)
    assert name not in MEMBERS  # (the fake model's own: not constrained)
    assert (await stats(client)).guide.masked == numbers.guide.masked

    assert await completed(client, "shapes/grow.go", RESOLVED_GO, 3) in ("width", "height", "Area")
    assert (await stats(client)).guide.masked > numbers.guide.masked
