"""Cross-vocabulary drafting: a draft model with another tokenizer keeps greedy speculation exact,
stays in step with the target's text, and converts text at the token boundary with care."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec_lsp.engine.backends.base import sync
from spec_lsp.engine.backends.fake import (
    FIM_MID,
    FIM_PRE,
    FIM_SUF,
    SPECIALS,
    FakeModel,
    hashed_noise,
)
from spec_lsp.engine.decode.speculative import DecodeJob, generate
from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest
from spec_lsp.engine.drafters.crossvocab import CrossVocabDrafter
from spec_lsp.engine.drafters.token_text import (
    ContextText,
    check_round_trip,
    complete_utf8,
    text_to_target,
)
from spec_lsp.engine.policy.adaptive import FixedPolicy
from spec_lsp.engine.types import CancelToken, DecodeStats, EngineError, SamplingParams

CHARS = "abcxy ():=\n\té→日"
# the target splits words into word pieces; the draft into other pieces (and whole "→")
TARGET_PIECES = ["ab", "abc", "xy", " x", " (", "):", ":\n", "\n ", "  ", "é", "日", "ca", "bc"]
TARGET_PIECES += [" a", "→x", "\t=", "= ", "x=", "yy", "cab", "a(", "\n\n", "abca", "):\n"]
DRAFT_PIECES = ["a", "ba", "cx", "y ", "(a", ")", "b", "c ", "  ", "→", "é", "xa", "=\n"]
DRAFT_PIECES += ["a b", "bc)", "\n\t", ":\n\t", "yx", "ax", "(x", "  (", "b=", "c:"]
BOS = 256 + len(SPECIALS)  # the first id after the FakeModel specials: the draft's BOS


class PieceModel(FakeModel):
    """A FakeModel with a vocabulary of its own: bytes, the fake specials, then text pieces,
    tokenized by greedy longest match (so two of them split the same text differently)."""

    def __init__(
        self,
        logits_fn: Callable[[Sequence[int]], np.ndarray],
        pieces: Sequence[str],
        *,
        fingerprint: str,
        bos: bool = False,
    ) -> None:
        self.pieces = [bytes([i]) for i in range(256)] + [b""] * (len(SPECIALS) + 1)
        self.pieces += [p.encode() for p in pieces]
        self.ids = {p: i for i, p in enumerate(self.pieces) if p}
        self.longest = max(len(p) for p in self.pieces)
        self.tokenized: list[int] = []  # characters tokenized per call (for the cost tests)
        super().__init__(logits_fn, n_vocab=len(self.pieces), fingerprint=fingerprint)
        if bos:
            special = {**self.info.special, "bos": BOS}
            self.info = dataclasses.replace(self.info, special=special, add_bos=True)

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        self.tokenized.append(len(text))
        data, out, i = text.encode(), [], 0
        while i < len(data):
            n = next(
                n
                for n in range(min(self.longest, len(data) - i), 0, -1)
                if data[i : i + n] in self.ids
            )
            out.append(self.ids[data[i : i + n]])
            i += n
        return out

    def token_bytes(self, token: int) -> bytes:
        return self.pieces[token]

    def greedy_piece(self, data: bytes) -> int:
        n = next(n for n in range(min(self.longest, len(data)), 0, -1) if data[:n] in self.ids)
        return self.ids[data[:n]]


def _h(text: str, salt: str = "") -> int:
    return int.from_bytes(
        hashlib.blake2b(f"{salt}|{text}".encode(), digest_size=4).digest(), "little"
    )


def next_char(text: str) -> str:
    """The toy language: the next character is a function of the last three."""
    return CHARS[_h(text[-3:]) % len(CHARS)]


def next_char_mostly(text: str) -> str:
    """The draft's approximation: right four times in five."""
    c = next_char(text)
    return CHARS[(CHARS.index(c) + 1) % len(CHARS)] if _h(text[-4:], "d") % 5 == 0 else c


def reference_view(tokens: Sequence[int], pieces: Sequence[bytes]) -> bytes:
    """What the drafter should see, from scratch: the text after the last template token, and
    if that is the middle token, the prefix segment before it."""
    marks = [i for i, t in enumerate(tokens) if t in (FIM_PRE, FIM_SUF, FIM_MID, 256)]
    last = marks[-1] if marks else -1
    head: list[int] = []
    if last >= 0 and tokens[last] == FIM_MID and FIM_PRE in tokens[:last]:
        pre = last - 1 - list(tokens[:last])[::-1].index(FIM_PRE)
        end = next(i for i in marks if i > pre)
        head = list(tokens[pre + 1 : end])
    return b"".join(pieces[t] for t in [*head, *tokens[last + 1 :]])


def chain(data: bytes, n: int, rule: Callable[[str], str]) -> bytes:
    """The next n bytes of the language after `data` (which may end inside a character)."""
    whole = complete_utf8(data)
    partial, text, out = data[whole:], data[:whole].decode("utf-8", "replace"), bytearray()
    while len(out) < n + len(partial):
        c = rule(text)
        text += c
        out += c.encode()
    return bytes(out[len(partial) :] if out.startswith(partial) else out)


def text_model(pieces, rule, *, fingerprint, bos=False, noise_only=False) -> PieceModel:
    holder: list[PieceModel] = []

    def logits(context: Sequence[int]) -> np.ndarray:
        model = holder[0]
        out = hashed_noise(context, model.info.n_vocab, salt=fingerprint) * 0.5
        if not noise_only:
            view = reference_view(context, model.pieces)
            out[model.greedy_piece(chain(view, model.longest, rule))] += 10.0
        out[256] -= 20.0  # never EOS
        return out

    holder.append(PieceModel(logits, pieces, fingerprint=fingerprint, bos=bos))
    return holder[0]


def target_model() -> PieceModel:
    return text_model(TARGET_PIECES, next_char, fingerprint="word-pieces")


def draft_model(mode: str, *, bos: bool = False) -> PieceModel:
    rule = next_char_mostly if mode == "mostly" else next_char
    return text_model(DRAFT_PIECES, rule, fingerprint="draft", bos=bos, noise_only=mode == "random")


def plain_greedy(prompt: list[int], max_tokens: int) -> list[int]:
    model = target_model()
    logits, _ = sync(model, prompt)
    out: list[int] = []
    while len(out) < max_tokens:
        out.append(int(np.argmax(logits)))
        logits = model.evaluate([out[-1]], logits_from=0)[0]
    return out


class InStep(Drafter):
    """Wraps the drafter: after every call the draft cache holds exactly the target's text (as
    draft tokens) and the drafted text, less the last drafted token (never evaluated)."""

    name = "checked"

    def __init__(self, drafter: CrossVocabDrafter, target: PieceModel) -> None:
        self.inner, self.target = drafter, target
        self.calls = 0

    def draft(self, request: DraftRequest) -> Draft:
        result = self.inner.draft(request)
        assert len(result.tokens) <= request.max_tokens and result.probs is None
        view = reference_view(request.context, self.target.pieces)
        model, drafted = self.inner.model, self.inner.last_draft_tokens
        if complete_utf8(view) == len(view) and drafted:
            self.calls += 1
            held = b"".join(model.token_bytes(t) for t in model.tokens)
            whole = held + model.token_bytes(drafted[-1])
            expected = view + self.inner.last_draft_text
            small = len(view) > self.inner.max_view_bytes
            assert whole == expected if not small else expected.endswith(whole)
            assert model.tokens[:1] == ([BOS] if model.info.add_bos else model.tokens[:1])
        return result


def decode(prompt, drafter, k, max_tokens, params=None):
    stats = DecodeStats()
    out = generate(
        target_model(),
        drafter,
        FixedPolicy(k),
        DecodeJob(prompt, max_tokens, params or SamplingParams(), frozenset({256})),
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=stats,
    )
    return out, stats


def make_prompt(target: PieceModel, pre: str, suf: str, mid: str, fim: bool) -> list[int]:
    if not fim:
        return target.tokenize(pre + mid) or target.tokenize("a")
    return [
        FIM_PRE,
        *target.tokenize(pre),
        FIM_SUF,
        *target.tokenize(suf),
        FIM_MID,
        *target.tokenize(mid),
    ]


text = st.text(alphabet=CHARS, max_size=30)


@settings(max_examples=120, deadline=None)
@given(
    pre=text,
    suf=text,
    mid=text,
    fim=st.booleans(),
    k=st.integers(1, 10),
    max_tokens=st.integers(1, 40),
    mode=st.sampled_from(["same", "mostly", "random"]),
    bos=st.booleans(),
    small_window=st.booleans(),
)
def test_greedy_cross_vocab_speculation_equals_plain_greedy(
    pre, suf, mid, fim, k, max_tokens, mode, bos, small_window
):
    target = target_model()
    prompt = make_prompt(target, pre, suf, mid, fim)
    draft = draft_model(mode, bos=bos)
    drafter = CrossVocabDrafter(draft, target=target, max_view_bytes=16 if small_window else None)
    out, stats = decode(prompt, InStep(drafter, target), k, max_tokens)
    assert out == plain_greedy(prompt, max_tokens)
    assert stats.accepted <= stats.drafted


def test_a_draft_that_knows_the_language_is_mostly_accepted():
    target = target_model()
    prompt = make_prompt(target, "abc(x):\n\tab", "", "ca", True)
    checked = InStep(CrossVocabDrafter(draft_model("same"), target=target), target)
    out, stats = decode(prompt, checked, 6, 120)
    assert out == plain_greedy(prompt, 120)
    assert checked.calls > 5
    assert stats.accepted / stats.drafted > 0.9
    assert stats.target_passes < len(out) / 2.5
    out, mostly = decode(prompt, CrossVocabDrafter(draft_model("mostly"), target=target), 6, 120)
    assert out == plain_greedy(prompt, 120)
    assert 0.2 < mostly.accepted / mostly.drafted < stats.accepted / stats.drafted


def test_sampling_stays_exact_in_distribution_terms():
    """At T > 0 the proposal is deterministic (q one-hot): accepted tokens are the target's own."""
    target = target_model()
    prompt = make_prompt(target, "ab(", "", "", False)
    drafter = CrossVocabDrafter(draft_model("same"), target=target)
    out, stats = decode(prompt, drafter, 4, 30, SamplingParams(temperature=0.7, seed=1))
    assert len(out) == 30 and stats.drafted > 0


def test_only_the_tail_is_retokenized_and_evaluated():
    target = target_model()
    prompt = target.tokenize("abc(x):\n\tab ca" * 40)
    draft = draft_model("same")
    drafter = CrossVocabDrafter(draft, target=target)
    draft.tokenized.clear()  # (the tokenizer check at construction)
    _, stats = decode(prompt, drafter, 4, 80)
    first, rest = draft.tokenized[0], draft.tokenized[1:]
    assert first >= 500
    assert rest and max(rest) < 80  # a look-behind and the new text, never the whole prompt
    prompt_draft_tokens = len(draft.tokenize("abc(x):\n\tab ca" * 40))
    assert draft.evaluated < prompt_draft_tokens + 12 * stats.rounds


def test_catch_up_counts_what_the_next_draft_evaluates():
    """`catch_up` predicts the draft-model tokens the next call evaluates before drafting:
    the whole prompt at first, then only what is new (the look-behind and the added text).
    A draft of one token never evaluates that token."""
    target = target_model()
    draft = draft_model("same")
    drafter = CrossVocabDrafter(draft, target=target)
    prompt = target.tokenize("abc(x):\n\tab ca" * 20)
    rng = np.random.default_rng(0)
    for context in (prompt, prompt + target.tokenize(" abc(x):\n"), prompt):
        predicted = drafter.catch_up(context)
        before = draft.evaluated
        drafter.draft(DraftRequest(context, 1, SamplingParams(), rng))
        # (one fewer when the last token is healed: re-drafted, not evaluated)
        assert predicted - 1 <= draft.evaluated - before <= predicted
    assert drafter.catch_up(prompt) <= 2
    assert drafter.catch_up([]) == 0


def test_the_draft_cache_follows_a_changed_prompt_and_a_foreign_state():
    target = target_model()
    draft = draft_model("same")
    drafter = CrossVocabDrafter(draft, target=target)
    request = DraftRequest(
        target.tokenize("abc(x):\n\tab"), 4, SamplingParams(), np.random.default_rng(0)
    )
    first = drafter.draft(request)
    draft.load_state(dataclasses.replace(draft.save_state(), tokens=tuple(draft.tokenize("xyz"))))
    again = drafter.draft(request)  # another document's state was loaded meanwhile
    assert again.tokens == first.tokens
    edited = DraftRequest(
        target.tokenize("abc(y):\n\tab"), 4, SamplingParams(), np.random.default_rng(0)
    )
    drafter.draft(edited)
    held = b"".join(draft.token_bytes(t) for t in draft.tokens)
    assert held.startswith(b"abc(y):\n\tab")


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(st.tuples(st.sampled_from(["extend", "cut", "prompt"]), text), max_size=12),
    fim=st.booleans(),
)
def test_context_text_incremental_equals_from_scratch(steps, fim):
    target = target_model()
    view = ContextText(target)
    context = make_prompt(target, "ab(", "x)", "c", fim)
    for op, chars in steps:
        if op == "extend":
            context = context + target.tokenize(chars)
        elif op == "cut":
            context = context[: max(1, len(context) - len(chars))]
        else:
            context = make_prompt(target, chars, "y", "a", fim)
        assert view.update(context) == reference_view(context, target.pieces)


def test_boundary_merges_and_incomplete_last_token():
    target = target_model()
    a, ab = target.ids[b"a"], target.ids[b"ab"]
    # "a" + "bc(" tokenizes as "abc" "(": the context cannot change its "a", so "bc" follows
    assert text_to_target(target, a, "bc(", final=True) == target.tokenize("bc(")
    # "ab" + "  (x" keeps "ab": the tokens after it are the text's tokens in context
    assert text_to_target(target, ab, "  (x", final=True) == target.tokenize("  (x")
    # not final: the last token ("x") might grow into "xy" with more text, so it is held back
    assert text_to_target(target, ab, "  (x", final=False) == target.tokenize("  (x")[:-1]
    assert complete_utf8("a→".encode()[:-1]) == 1
    assert complete_utf8("a→".encode()) == 4


def test_tokenizers_that_do_not_round_trip_are_refused():
    class SpacePrefix(PieceModel):
        def tokenize(self, text: str, *, special: bool = False) -> list[int]:
            return super().tokenize(" " + text, special=special)

    bad = SpacePrefix(lambda _c: np.zeros(400), DRAFT_PIECES, fingerprint="spm")
    with pytest.raises(EngineError, match="does not reproduce text"):
        check_round_trip(bad, what="draftModel")
    with pytest.raises(EngineError, match="draftModel"):
        CrossVocabDrafter(bad, target=target_model())
