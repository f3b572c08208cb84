"""The soak's pure parts: its verdict on answers, the edits its typist sends, RSS of a tree."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.soak_args import options, parse, server_command, warmup_s
from bench.soak_client import INLINE, REQUEST_CANCELLED, Ledger
from bench.soak_report import (
    Period,
    children_listed,
    children_scanned,
    growth_mb,
    process_tree,
    rss_kb,
    stderr_excerpts,
    table,
    tree_rss_mb,
    warmup_end,
)
from bench.soak_typist import Document, Typist

URI = "file:///soak/a.py"


def inline(line: int = 3, character: int = 7) -> dict:
    return {"textDocument": {"uri": URI}, "position": {"line": line, "character": character}}


def items(text: str = "x") -> dict:
    return {"items": [{"insertText": text}]}


# -- the ledger: what fails a run


def test_an_error_answer_fails_and_names_its_request() -> None:
    ledger = Ledger()
    ledger.sent(1, INLINE, inline(), now=12.5)
    ledger.answer({"id": 1, "error": {"code": -32603, "message": "boom"}}, now=13.0)
    assert ledger.outcomes["error"] == 1
    [failure] = ledger.failures()
    assert "boom" in failure and INLINE in failure and URI in failure
    assert "3:7" in failure and "t=12.500s" in failure


def test_request_cancelled_for_a_request_the_client_cancelled_is_not_a_failure() -> None:
    ledger = Ledger()
    ledger.sent(1, INLINE, inline(), now=1.0)
    assert ledger.cancel(1, now=1.1)
    ledger.answer({"id": 1, "error": {"code": REQUEST_CANCELLED, "message": "x"}}, now=1.2)
    assert ledger.outcomes == {"cancelled": 1}
    assert ledger.close(now=2.0) == [] and ledger.failures() == []


def test_request_cancelled_that_the_client_did_not_ask_for_fails() -> None:
    ledger = Ledger()
    ledger.sent(1, INLINE, inline(), now=1.0)
    ledger.answer({"id": 1, "error": {"code": REQUEST_CANCELLED, "message": "x"}}, now=1.2)
    assert ledger.outcomes == {"error": 1} and len(ledger.failures()) == 1


def test_cancelling_an_answered_request_sends_nothing() -> None:
    ledger = Ledger()
    ledger.sent(1, INLINE, inline(), now=1.0)
    ledger.answer({"id": 1, "result": items()}, now=1.1)
    assert not ledger.cancel(1, now=1.2)
    assert not ledger.cancel(99, now=1.2)


def test_answers_are_items_or_empty_with_their_latency() -> None:
    ledger = Ledger()
    ledger.sent(1, INLINE, inline(), now=1.0)
    ledger.sent(2, INLINE, inline(), now=1.0)
    ledger.sent(3, "specLsp/stats", None, now=1.0)
    ledger.sent(4, INLINE, inline(), now=1.0)
    ledger.sent(5, INLINE, inline(), now=1.0)
    ledger.answer({"id": 4, "result": [{"insertText": "y"}]}, now=1.0)  # a bare list of items
    ledger.answer({"id": 5, "result": None}, now=1.0)
    ledger.answer({"id": 1, "result": items()}, now=1.25)
    ledger.answer({"id": 2, "result": {"items": []}}, now=1.5)
    ledger.answer({"id": 3, "result": {"ready": True}}, now=1.5)
    assert ledger.outcomes == {"items": 2, "empty": 2}
    assert [round(s, 2) for _, s in ledger.latencies] == [0.0, 0.0, 0.25, 0.5]
    assert ledger.sent_inline == 4 and ledger.failures() == []


def test_a_request_never_answered_is_listed_with_its_age() -> None:
    ledger = Ledger()
    ledger.sent(1, INLINE, inline(), now=1.0)
    ledger.sent(2, INLINE, inline(5, 0), now=2.0)
    ledger.answer({"id": 1, "result": items()}, now=1.5)
    left = ledger.close(now=32.0)
    assert [r.id for r in left] == [2]
    [failure] = ledger.failures()
    assert "#2" in failure and "5:0" in failure and "30.0s" in failure
    # the server's shutdown then cancels it: still one failure, not an error on top
    ledger.answer({"id": 2, "error": {"code": REQUEST_CANCELLED, "message": "x"}}, now=33.0)
    assert ledger.failures() == [failure] and ledger.errors == []


def test_answered_twice_or_to_an_unknown_id_fails() -> None:
    ledger = Ledger()
    ledger.sent(1, INLINE, inline(), now=1.0)
    assert ledger.answer({"id": 1, "result": items()}, now=1.1) is not None
    assert ledger.answer({"id": 1, "result": items()}, now=1.2) is None
    ledger.answer({"id": 7, "result": None}, now=1.3)
    failures = ledger.failures()
    assert len(failures) == 2
    assert "twice" in failures[0] and "never sent" in failures[1]


# -- the typist: the edits it sends are the edits it makes


def utf16_offset(text: str, position: dict) -> int:
    """The server's reading of an LSP position (UTF-16 code units) as a code-point offset."""
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    start = starts[position["line"]]
    units = 0
    offset = start
    while units < position["character"]:
        units += 2 if ord(text[offset]) > 0xFFFF else 1
        offset += 1
    return offset


def apply(text: str, changes: list[dict]) -> str:
    for change in changes:
        if "range" not in change:
            text = change["text"]
            continue
        start = utf16_offset(text, change["range"]["start"])
        end = utf16_offset(text, change["range"]["end"])
        text = text[:start] + change["text"] + text[end:]
    return text


SOURCE = "".join(f"def f{i}(x):\n    return x + {i}  # é 🙂 {'y' * (i % 7)}\n\n" for i in range(40))


@pytest.mark.parametrize("seed", range(5))
def test_every_action_sends_the_change_it_made(seed: int) -> None:
    rng = random.Random(seed)
    doc = Document(URI, SOURCE, rng)
    mirror = doc.text
    actions = ["type_char"] * 6 + ["backspace", "jump", "paste", "delete_block"]
    for _ in range(2000):
        action = rng.choice(actions)
        changes = getattr(doc, action)()
        mirror = apply(mirror, changes)
        assert mirror == doc.text, action
        assert 0 <= doc.cursor <= len(doc.text)
        if rng.random() < 0.05:
            changes = doc.accept(doc.plan[:5] + "zz")
            mirror = apply(mirror, changes)
            assert mirror == doc.text


def test_paste_and_delete_are_several_lines_in_one_change() -> None:
    doc = Document(URI, SOURCE, random.Random(1))
    [paste] = doc.paste()
    assert paste["text"].count("\n") >= 3
    doc.cursor = len(doc.text) // 2
    removed = doc.text
    [delete] = doc.delete_block()
    lines = delete["range"]["end"]["line"] - delete["range"]["start"]["line"]
    assert delete["text"] == "" and lines in range(2, 11)
    assert delete["range"]["start"]["character"] == delete["range"]["end"]["character"] == 0
    assert len(removed) - len(doc.text) == len(doc.plan)  # to type again


def test_accept_inserts_only_what_the_plan_agrees_with() -> None:
    doc = Document(URI, SOURCE, random.Random(0))
    plan = doc.plan
    [change] = doc.accept(plan[:4] + "\x00nope")
    assert change["text"] == plan[:4] and doc.plan == plan[4:]
    assert doc.accept("\x00") == []


class FakeClient:
    def __init__(self) -> None:
        self.sent: list[tuple] = []
        self.on_answer: list = []
        self.ledger = Ledger()
        self.next_id = 0

    def notify(self, method: str, params: dict) -> None:
        self.sent.append(("notify", method, params))

    def request(self, method: str, params: dict) -> int:
        self.next_id += 1
        self.ledger.sent(self.next_id, method, params, now=0.0)
        self.sent.append(("request", method, self.next_id))
        return self.next_id

    def cancel(self, id: int) -> None:
        if self.ledger.cancel(id, now=0.0):
            self.sent.append(("notify", "$/cancelRequest", {"id": id}))

    def answer(self, id: int, result: dict) -> None:
        msg = {"id": id, "result": result}
        request = self.ledger.answer(msg, now=0.0)
        for callback in self.on_answer:
            callback(request, msg)


def typed(typist: Typist) -> list[dict]:
    doc = typist.current
    changes = doc.type_char()
    typist.changed(doc, changes)
    return changes


def test_a_new_request_cancels_the_open_one_of_its_document() -> None:
    client = FakeClient()
    typist = Typist(client, {URI: SOURCE}, random.Random(0))
    typed(typist)
    typed(typist)
    methods = [m for _, m, _ in client.sent]
    assert methods == [
        "textDocument/didOpen",
        "textDocument/didChange",
        INLINE,
        "$/cancelRequest",
        "textDocument/didChange",
        INLINE,
    ]
    assert client.sent[3][2] == {"id": 1}
    client.answer(2, {"items": []})
    typed(typist)
    assert "$/cancelRequest" not in [m for _, m, _ in client.sent[6:]]  # 2 was answered


def test_only_a_suggestion_for_the_text_as_it_stands_is_accepted() -> None:
    client = FakeClient()
    typist = Typist(client, {URI: SOURCE}, random.Random(0))
    doc = typist.current
    typed(typist)
    typed(typist)  # request 2 replaces request 1
    typist.rng.random = lambda: 0.0  # type: ignore[method-assign]  # always accept
    text, plan = doc.text, doc.plan
    client.answer(1, items(plan[:3]))  # for an older version: not shown, not accepted
    assert doc.text == text and typist.keys["accept"] == 0
    client.answer(2, items(plan[:3] + "?"))
    assert doc.text == text + plan[:3] and typist.keys["accept"] == 1
    assert client.sent[-1][1] == INLINE  # a new request after the accept


def test_switches_visit_every_document_first() -> None:
    """The server keeps a saved KV state per document it has seen (~10-15 MB each with a
    model): the user visits all of them early, so those caches fill in the warm-up."""
    sources = {f"file:///soak/{n}.py": SOURCE for n in "abcde"}
    typist = Typist(FakeClient(), sources, random.Random(0))  # type: ignore[arg-type]
    seen = [typist.current.uri]
    while len(seen) < 5:
        if typist.tick() == "switch":
            seen.append(typist.current.uri)
    assert seen == list(sources)


# -- RSS over a process tree


def test_rss_of_a_tree_counts_a_child() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        deadline = time.monotonic() + 30
        while rss_kb(child.pid) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        me = os.getpid()
        assert child.pid in process_tree(me)
        assert child.pid in children_scanned(me)
        listed = children_listed(me)
        assert listed is None or child.pid in listed
        alone = rss_kb(me)
        total, procs = tree_rss_mb(me)
        assert alone is not None and procs >= 2
        assert total * 1024 >= alone + (rss_kb(child.pid) or 1) - 1
    finally:
        child.kill()
        child.wait()
    assert child.pid not in process_tree(os.getpid())
    assert rss_kb(child.pid) is None


def test_a_process_that_is_gone_has_no_tree() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert rss_kb(child.pid) is None
    total, procs = tree_rss_mb(child.pid)
    assert procs == 0 and math.isnan(total)


# -- the report


def period(t: float, rss: float) -> Period:
    return Period(t, rss, 1, 10, 10, 5, 5, 0, 0, 3.0, 9.0, 0)


def test_growth_is_from_the_end_of_the_warm_up() -> None:
    periods = [period(10, 100), period(20, 150), period(30, 160), period(40, 170)]
    assert growth_mb(periods, warmup_s=20) == 20
    assert growth_mb(periods, warmup_s=0) == 70
    assert growth_mb(periods, warmup_s=999) == 70  # shorter than the warm-up: from the start
    assert math.isnan(growth_mb([], warmup_s=0))
    periods.append(period(50, math.nan))  # the server died: its last sample has no RSS
    assert growth_mb(periods, warmup_s=20) == 20


def test_table_is_markdown_with_the_baseline_marked() -> None:
    rows = [period(10, 100.0), period(20, 101.5)]
    rows[0].baseline = True
    lines = table(rows).splitlines()
    assert len(lines) == 4 and lines[0].startswith("| t (s) |") and lines[1].startswith("|---:")
    assert lines[2].startswith("| 10 * | 100.0 |") and lines[3].startswith("| 20 | 101.5 |")


def test_stderr_excerpts_show_errors_with_context(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    lines = [f"INFO line {i}" for i in range(50)]
    lines[20] = "2026-01-01 00:00:00,000 ERROR pygls: Exception occurred for message 12"
    log.write_text("\n".join(lines))
    excerpt = stderr_excerpts(log, context=2)
    assert excerpt[0].startswith("19: ") and excerpt[-1].startswith("23: ")
    assert any("ERROR" in line for line in excerpt)
    assert stderr_excerpts(tmp_path / "missing.log") == []


def test_stderr_excerpts_keep_the_stacks_after_a_fatal_error(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    stacks = [f'  File "x.py", line {i} in f' for i in range(30)]
    log.write_text("\n".join(["INFO ready", "Fatal Python error: Aborted", "", *stacks]))
    excerpt = stderr_excerpts(log, context=2)
    assert excerpt[0] == "1: INFO ready" and excerpt[-1].endswith("line 29 in f")


# -- the command line


def test_flags_reach_the_server() -> None:
    args = parse(["--backend", "fake", "--log-level", "DEBUG", "--drafter", "auto"])
    command = server_command(args)
    assert command[-4:] == ["--backend", "fake", "--log-level", "DEBUG"]
    assert "--model" not in command
    assert args.minutes == 30.0
    args = parse(["--model", "m.gguf", "--setting", "threads=1", "--setting", "fimTemplate=x"])
    assert server_command(args)[-2:] == ["--model", "m.gguf"]
    named = server_command(parse(["--model", "smollm2-135m"]))[-1]
    assert named.endswith("SmolLM2-135M-Instruct.Q4_1.gguf") and os.path.isabs(named)
    assert options(args) == {"drafter": "ngram", "maxTokens": 32, "threads": 1, "fimTemplate": "x"}


def test_warm_up_is_a_fifth_of_the_run_at_most_two_minutes() -> None:
    assert warmup_s(parse(["--minutes", "2"])) == 24
    assert warmup_s(parse([])) == 120
    assert warmup_s(parse(["--keys", "1000", "--keys-per-second", "50"])) == 4
    assert warmup_s(parse(["--keys", "10", "--warmup-s", "7"])) == 7
    assert parse(["--keys", "10"]).minutes is None


def test_crashes_the_server_answered_empty_fail_the_soak() -> None:
    """A SmolLM2 soak passed with 131 requests the engine crashed on: the server answered them
    empty and counted them, the client saw nothing wrong. Now they fail it, as do error lines."""
    from bench.soak import server_failures

    clean = {"server_requests": {"requests": 10, "served": 10}}
    assert server_failures(clean, 0) == []
    assert server_failures(None, 0) == []
    crashed = {"server_requests": {"requests": 10, "errors": 3}}
    assert server_failures(crashed, 0) == ["the engine crashed on 3 requests (answered empty)"]
    assert server_failures(clean, 262) == ["the server logged 262 error lines"]


def test_the_growth_bound_is_the_stated_one() -> None:
    assert parse(["--backend", "fake"]).max_growth_mb == 5.0
    assert parse(["--model", "smollm2-135m"]).max_growth_mb == 20.0
    assert parse(["--max-growth-mb", "7"]).max_growth_mb == 7.0


def test_what_the_server_holds_is_one_line_per_moment() -> None:
    from bench.soak import held

    memory = {
        "saved_states": {"count": 2, "bytes": 3 * 2**20},
        "suggestions": {"entries": 5, "chars": 900},
        "continuations": {"tokens": 120},
        "workspace": {"documents": 4, "chars": 5000},
        "rss_mb": 80.5,
    }
    assert held(memory) == (
        "saved KV states 2 (3.0 MB), suggestions 5 (900 chars), continuations 120 tokens, "
        "workspace 4 documents (5000 chars), rss 80.5 MB"
    )


def held_states(count: int, mb: float, max_count: int = 4) -> dict:
    return {
        "saved_states": {
            "count": count,
            "bytes": int(mb * 2**20),
            "max_count": max_count,
            "max_bytes": 256 * 2**20,
        }
    }


def test_the_pool_is_full_at_its_count_or_within_a_state_of_its_bytes() -> None:
    from bench.soak import pool_full

    assert not pool_full({}, documents=5)
    assert not pool_full(held_states(3, 30), documents=5)
    assert pool_full(held_states(4, 40), documents=5)
    assert pool_full(held_states(2, 20), documents=3)  # the current document's state is live
    assert pool_full(held_states(2, 200), documents=5)  # a third would pass 256 MB
    # the fake backend's states hold tokens, no KV: the warm-up does not wait for them (a
    # 100,000-key soak's warm-up waited until t=720s and hid +4.1 MB from t=120s)
    assert pool_full(held_states(1, 0.01), documents=5)


def test_the_warm_up_ends_when_the_saved_states_fill_their_pool() -> None:
    """RSS rose ~10 MB with each saved KV state: the growth is measured from a sample whose
    pool is full, not from a fixed time when it may still have been filling."""
    periods = [period(t, 500 + t / 10) for t in range(30, 601, 30)]
    for p in periods:
        p.steady = p.t in (60, 180, 210)
    assert warmup_end(periods, 120) == (5, True)  # t=180: the first steady from t=120
    assert growth_mb(periods, 120, 5) == periods[-1].rss_mb - periods[5].rss_mb
    for p in periods:
        p.steady = p.t == 420  # only in the second half: not used
    assert warmup_end(periods, 120) == (3, False)  # t=120, and the report says so
    assert warmup_end([], 120) == (0, False)


def test_the_table_shows_the_saved_states() -> None:
    rows = [period(10, 100.0), period(20, 101.5)]
    rows[1].held = held_states(3, 28.9)
    lines = table(rows).splitlines()
    assert lines[0].endswith("| saved KV |")
    assert lines[2].endswith("| - |") and lines[3].endswith("| 3: 28.9 MB |")
    assert rows[1].states_mb == pytest.approx(28.9, abs=0.01) and math.isnan(rows[0].states_mb)
