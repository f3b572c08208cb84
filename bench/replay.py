"""Keystroke replay: type real code into `spec-lsp serve` over LSP, one character at a time.

Each keystroke sends didChange, then textDocument/inlineCompletion (Automatic), cancelling the
previous request if it is still pending, ~100 ms between keys (or, with --wait, after each
answer). Run once with caching and once without; prints p50/p95 latency, the share of requests
answered without a model call, prompt tokens evaluated per model call, and how often the
suggestion on screen predicted the next character typed.

    .venv/bin/python -m bench.replay                 # the default model, both modes
    .venv/bin/python -m bench.replay --backend fake  # quick check of the harness
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

HERE = Path(__file__).parent
SOURCE = HERE / "replay_source.py"
TYPED_MARKER = "# <typed>\n"  # the text after this marker (to the next marker) is typed live
# what textDocument/inlineCompletion answers: a list, its items (as dicts where pygls could not
# type them), or nothing
Answer = lsp.InlineCompletionList | Sequence[Any] | None


@dataclass
class Result:
    mode: str
    latencies: list[float] = field(default_factory=list)
    answered: int = 0
    cancelled: int = 0
    requests: int = 0
    predicted: int = 0
    predictable: int = 0
    stats: dict[str, Any] = field(default_factory=dict)
    typed_through_latencies: list[float] = field(default_factory=list)

    def row(self) -> str:
        lat = sorted(self.latencies) or [float("nan")]
        p50 = statistics.median(lat) * 1000
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))] * 1000
        tt = sorted(self.typed_through_latencies) or [float("nan")]
        tt95 = tt[min(len(tt) - 1, int(0.95 * len(tt)))] * 1000
        hits = self.stats.get("cache_hits", {})
        model_calls = max(
            self.stats.get("requests", 0)
            - hits.get("typed_through", 0)
            - hits.get("precompute", 0),
            1,
        )
        no_model = hits.get("typed_through", 0) / max(self.requests, 1)
        per_call = self.stats.get("prompt_tokens_evaluated", 0) / model_calls
        prompt_per_call = self.stats.get("prompt_tokens", 0) / model_calls
        return (
            f"| {self.mode} | {self.requests} | {self.answered} | {self.cancelled} | {p50:.0f} | {p95:.0f} | "
            f"{tt95:.1f} | {no_model:.0%} | {per_call:.1f} / {prompt_per_call:.0f} | "
            f"{self.predicted}/{self.predictable} |"
        )


def split_source(text: str) -> tuple[str, str, str]:
    before, rest = text.split(TYPED_MARKER, 1)
    typed, after = rest.split(TYPED_MARKER, 1)
    return before, typed, after


def position_of(text: str, offset: int) -> lsp.Position:
    line = text.count("\n", 0, offset)
    col = offset - (text.rfind("\n", 0, offset) + 1)
    return lsp.Position(
        line=line, character=len(text[offset - col : offset].encode("utf-16-le")) // 2
    )


async def replay(args: argparse.Namespace, *, cache: bool) -> Result:
    before, typed, after = split_source(SOURCE.read_text())
    typed = typed[: args.chars]
    client = LanguageClient("replay", "0.1")
    server = [sys.executable, "-m", "spec_lsp.cli", "serve", "--backend", args.backend]
    await client.start_io(*server)
    options = {
        "cache": cache,
        "precompute": cache,
        "drafter": args.drafter,
        "maxTokens": args.max_tokens,
        "prefixTokens": args.prefix_tokens,
        "suffixTokens": args.suffix_tokens,
    }
    await client.initialize_async(
        lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities(
                text_document=lsp.TextDocumentClientCapabilities(
                    inline_completion=lsp.InlineCompletionClientCapabilities()
                )
            ),
            initialization_options=options,
        )
    )
    client.initialized(lsp.InitializedParams())
    uri = "file:///replay/replay_source.py"
    text = before + after
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="python", version=0, text=text)
        )
    )
    result = Result("cache on" if cache else "cache off")
    await _wait_ready(client, uri, text, len(before), args.ready_timeout)
    shown = ""
    pending: asyncio.Future[str] | None = None
    pending_id = ""
    version = 0
    for i, ch in enumerate(typed):
        if shown:
            result.predictable += 1
            result.predicted += shown.startswith(ch)
        offset = len(before) + i
        pos = position_of(text, offset)
        text = text[:offset] + ch + text[offset:]
        version += 1
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [lsp.TextDocumentContentChangePartial(range=lsp.Range(pos, pos), text=ch)],
            )
        )
        if pending is not None and not pending.done():
            client.protocol.notify("$/cancelRequest", lsp.CancelParams(id=pending_id))
        cursor = position_of(text, offset + 1)
        pending_id, pending = _request(client, uri, cursor, result)
        if args.wait:
            shown = await pending
        else:
            await asyncio.sleep(args.cadence)
            if pending.done():
                shown = pending.result()
    if pending is not None:
        await asyncio.wait_for(asyncio.shield(pending), timeout=args.ready_timeout)
    result.stats = await client.protocol.send_request_async("specLsp/stats", None)
    result.stats = _plain(result.stats)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return result


def _request(
    client: LanguageClient, uri: str, cursor: lsp.Position, result: Result
) -> tuple[str, asyncio.Future[str]]:
    """Send an inline completion request; its id, and the text it will show past the cursor
    ("" once cancelled)."""
    params = lsp.InlineCompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        position=cursor,
        context=lsp.InlineCompletionContext(trigger_kind=lsp.InlineCompletionTriggerKind.Automatic),
    )
    msg_id = f"replay-{result.requests}"
    result.requests += 1
    started = time.perf_counter()
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()

    def done(fut: asyncio.Future[Answer]) -> None:
        elapsed = time.perf_counter() - started
        try:
            items = fut.result()
        except Exception:  # cancelled requests answer with an error
            result.cancelled += 1
            answer.set_result("")
            return
        result.answered += 1
        result.latencies.append(elapsed)
        text = _first_text(items)
        if text and _starts_before(items, cursor):  # re-covers typed text: a typed-through answer
            result.typed_through_latencies.append(elapsed)
        answer.set_result(text[_typed_len(items, cursor) :])

    future = client.protocol.send_request_async(
        "textDocument/inlineCompletion", params, msg_id=msg_id
    )
    asyncio.ensure_future(future).add_done_callback(done)
    return msg_id, answer


def _listed(items: Answer) -> Sequence[Any]:
    """An answer's items: a list object's (whatever class pygls built it as), or the answer."""
    inner = getattr(items, "items", None)
    if inner is not None:
        return inner
    return items if isinstance(items, Sequence) else []


def _first_item(items: Answer) -> Any:
    listed = _listed(items)
    return listed[0] if listed else None


def _starts_before(items: Answer, cursor: lsp.Position) -> bool:
    return _typed_len(items, cursor) > 0


def _typed_len(items: Answer, cursor: lsp.Position) -> int:
    first = _first_item(items)
    start = getattr(getattr(first, "range", None), "start", None)
    if start is None or start.line != cursor.line:
        return 0
    return max(0, cursor.character - start.character)


def _first_text(items: Answer) -> str:
    first = _first_item(items)
    if first is None:
        return ""
    text = getattr(first, "insert_text", None) or (
        first.get("insertText") if isinstance(first, dict) else ""
    )
    return text if isinstance(text, str) else getattr(text, "value", "")


def _plain(obj: Any) -> Any:
    """pygls hands back untyped results as namedtuple-like objects: make them dicts."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if hasattr(obj, "_asdict"):
        return {k: _plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


async def _wait_ready(
    client: LanguageClient, uri: str, text: str, offset: int, timeout: float
) -> None:
    """Like a user who opens the file and pauses: wait for the model, then for one answer."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        stats = _plain(await client.protocol.send_request_async("specLsp/stats", None))
        if stats.get("models"):
            break
        await asyncio.sleep(0.2)
    else:
        raise SystemExit("the model did not load before --ready-timeout; is it pulled?")
    params = lsp.InlineCompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        position=position_of(text, offset),
        context=lsp.InlineCompletionContext(trigger_kind=lsp.InlineCompletionTriggerKind.Invoked),
    )
    await client.protocol.send_request_async("textDocument/inlineCompletion", params)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", default="llama", choices=["llama", "fake"])
    parser.add_argument("--drafter", default="ngram")
    parser.add_argument("--chars", type=int, default=120, help="characters to type")
    parser.add_argument("--cadence", type=float, default=0.1, help="seconds between keys")
    parser.add_argument(
        "--wait", action="store_true", help="wait for each answer before the next key"
    )
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--prefix-tokens", type=int, default=384)
    parser.add_argument("--suffix-tokens", type=int, default=96)
    parser.add_argument("--ready-timeout", type=float, default=600)
    parser.add_argument("--modes", default="on,off", help="cache modes to run: on,off")
    args = parser.parse_args()
    results = [asyncio.run(replay(args, cache=mode == "on")) for mode in args.modes.split(",")]
    print(
        f"\nkeystroke replay: {args.chars} chars, backend {args.backend}, drafter {args.drafter}, "
        f"{'wait for each answer' if args.wait else f'{args.cadence * 1000:.0f} ms between keys'}\n"
    )
    print(
        "| mode | requests | answered | cancelled | p50 ms | p95 ms | typed-through p95 ms | "
        "no model call | prompt tokens evaluated / in prompt, per model call | suggestion predicted next char |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(r.row())
    if len(results) == 2 and results[0].latencies and results[1].latencies:
        ratio = statistics.median(results[1].latencies) / max(
            statistics.median(results[0].latencies), 1e-6
        )
        print(f"\np50 latency, cache off / cache on: {ratio:.1f}x")


if __name__ == "__main__":
    main()
