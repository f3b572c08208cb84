"""The token window around the cursor: budgets, whole lines, stability while typing, cost."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spec_lsp.prompts.window import CHUNK_CHARS, SNAP_LINES, window


def chars(text: str) -> int:
    return len(text)


class Counting:
    """A token counter that records how often, and on how much text, it was called."""

    def __init__(self, per_token: int = 4) -> None:
        self.calls = 0
        self.chars = 0
        self.per_token = per_token

    def __call__(self, text: str) -> int:
        self.calls += 1
        self.chars += len(text)
        return -(-len(text) // self.per_token)


def numbered(n: int, start: int = 0) -> str:
    return "".join(f"line {i:03d}\n" for i in range(start, start + n))  # 9 chars a line


def first_line_number(window_prefix: str) -> int:
    return int(window_prefix.split("\n", 1)[0].split()[1])


def test_prefix_starts_on_the_earliest_block_edge_that_fits():
    # 100 lines of 9 chars; cursor line "x = " (4). Partial block (lines 96-99): 36 -> 40.
    # One more block of 16 lines (144) -> 184 <= 200; another would be 328.
    p, s = window(
        numbered(100) + "x = ", "", count_tokens=chars, prefix_budget=200, suffix_budget=0
    )
    assert p == numbered(20, start=80) + "x = "
    assert s == ""


def test_prefix_start_moves_only_when_the_budget_forces_it_and_by_a_whole_block():
    starts = {}
    for typed in range(4, 40):
        p, _ = window(
            numbered(100) + "x" * typed, "", count_tokens=chars, prefix_budget=200, suffix_budget=0
        )
        assert p.endswith("x" * typed)
        starts[typed] = first_line_number(p)
    # 36 (partial block) + 144 (block) + typed <= 200  <=>  typed <= 20
    assert {t for t, line in starts.items() if line == 80} == set(range(4, 21))
    assert {t for t, line in starts.items() if line == 96} == set(range(21, 40))


def test_start_is_stable_while_typing_a_line_and_pressing_enter():
    code = "".join(f"value_{i} = compute({i}, {i + 1})\n" for i in range(300))
    typed = "result = compute(value_1, value_2)\nprint(result)\nreturn result"
    count = Counting()
    starts = set()
    for n in range(1, len(typed) + 1):
        p, _ = window(code + typed[:n], "", count_tokens=count, prefix_budget=300, suffix_budget=0)
        assert (code + typed[:n]).endswith(p)
        starts.add(len(code) + n - len(p))  # the window's offset in the document
    assert len(starts) == 1
    (start,) = starts
    assert code.count("\n", 0, start) % SNAP_LINES == 0 and code[start - 1] == "\n"


def test_cursor_line_is_kept_whole_when_the_lines_above_do_not_fit():
    line = "y = " + "a + " * 20 + "b"  # 85 chars; the partial block above (lines 32-39) is 72
    text = numbered(40) + line
    p, _ = window(text, "", count_tokens=chars, prefix_budget=90, suffix_budget=0)
    assert p == line
    # a budget too small for the partial block: whole lines nearest the cursor, one by one
    p, _ = window(text, "", count_tokens=chars, prefix_budget=94, suffix_budget=0)
    assert p == numbered(1, start=39) + line
    p, _ = window(text, "", count_tokens=chars, prefix_budget=156, suffix_budget=0)
    assert p == numbered(7, start=33) + line
    p, _ = window(text, "", count_tokens=chars, prefix_budget=157, suffix_budget=0)
    assert p == numbered(8, start=32) + line


def test_a_20000_char_line_is_cut_from_the_left_at_a_stable_chunk_edge():
    big = "x" * 20_000
    count = Counting()
    cuts = set()
    for extra in range(0, 200, 7):
        line = big + "y" * extra
        count.calls = 0
        p, _ = window(
            numbered(50) + line, "", count_tokens=count, prefix_budget=100, suffix_budget=0
        )
        assert line.endswith(p) and count(p) <= 100 and len(p) > 400 - CHUNK_CHARS
        cut = len(line) - len(p)
        assert cut % CHUNK_CHARS == 0
        cuts.add(cut)
        assert count.calls <= 20  # a binary search, not a character walk
    assert len(cuts) <= 200 // CHUNK_CHARS + 1  # moves a chunk at a time, not every keystroke


def test_a_tiny_budget_cuts_inside_the_last_chunk():
    p, _ = window("abc\n" + "z" * 100, "", count_tokens=chars, prefix_budget=10, suffix_budget=0)
    assert p == "z" * 10


def test_suffix_ends_on_a_block_edge_counted_from_the_cursor():
    suffix = ")\n" + numbered(100)
    # first line 2 chars + 15 lines (135) = 137; one more block of 16 lines (144) would be 281
    _, s = window("", suffix, count_tokens=chars, prefix_budget=0, suffix_budget=200)
    assert s == ")\n" + numbered(15)
    _, s = window("", suffix, count_tokens=chars, prefix_budget=0, suffix_budget=281)
    assert s == ")\n" + numbered(31)


def test_suffix_with_a_small_budget_goes_line_by_line_then_cuts_the_first_line():
    suffix = ")\n" + numbered(100)
    _, s = window("", suffix, count_tokens=chars, prefix_budget=0, suffix_budget=30)
    assert s == ")\n" + numbered(3)  # 2 + 27
    _, s = window(
        "", "q" * 1000 + "\nrest\n", count_tokens=chars, prefix_budget=0, suffix_budget=200
    )
    assert s == "q" * 192  # the largest multiple of 64 chars that fits
    _, s = window("", "q" * 1000, count_tokens=chars, prefix_budget=0, suffix_budget=50)
    assert s == "q" * 50


def test_counts_blocks_not_characters_or_lines():
    small, large = Counting(), Counting()
    for count, lines in ((small, 2_000), (large, 50_000)):
        text = "".join(f"    total += item_{i} * weight\n" for i in range(lines))
        p, s = window(
            text + "    ret", text, count_tokens=count, prefix_budget=384, suffix_budget=96
        )
        assert count(p) <= 384 and count(s) <= 96
    assert small.calls == large.calls <= 24
    assert small.chars < 12 * (384 + 96) and large.chars < 12 * (384 + 96)


def test_crlf_text_is_kept_and_cut_after_the_line_break():
    text = "".join(f"a_{i} = {i}\r\n" for i in range(40))
    # lines a_0..a_9 are 9 chars with their CRLF, the others 11
    p, s = window(text + "b = ", text, count_tokens=chars, prefix_budget=150, suffix_budget=156)
    assert p == "".join(f"a_{i} = {i}\r\n" for i in range(32, 40)) + "b = "
    assert s == "".join(f"a_{i} = {i}\r\n" for i in range(16))
    _, s = window("", text, count_tokens=chars, prefix_budget=0, suffix_budget=155)
    assert s == "".join(f"a_{i} = {i}\r\n" for i in range(15))
    p, s = window(text + "b", text, count_tokens=chars, prefix_budget=10_000, suffix_budget=10_000)
    assert (p, s) == (text + "b", text)


def test_empty_texts_and_empty_cursor_line():
    assert window("", "", count_tokens=chars, prefix_budget=10, suffix_budget=10) == ("", "")
    assert window("a\n", "", count_tokens=chars, prefix_budget=10, suffix_budget=10) == ("a\n", "")
    assert window("a\n", "\nb", count_tokens=chars, prefix_budget=0, suffix_budget=0) == ("", "")


def test_everything_fits():
    p, s = window(
        "def f():\n    ", "\n\nx = 1", count_tokens=chars, prefix_budget=99, suffix_budget=99
    )
    assert (p, s) == ("def f():\n    ", "\n\nx = 1")


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab \r\n", max_size=400),
    st.text(alphabet="ab \r\n", max_size=400),
    st.integers(0, 120),
    st.integers(0, 120),
)
def test_windows_are_whole_lines_within_budget(prefix, suffix, prefix_budget, suffix_budget):
    p, s = window(
        prefix,
        suffix,
        count_tokens=chars,
        prefix_budget=prefix_budget,
        suffix_budget=suffix_budget,
    )
    assert prefix.endswith(p) and suffix.startswith(s)
    assert len(s) <= suffix_budget
    cursor_line = prefix[prefix.rfind("\n") + 1 :]
    if len(cursor_line) > prefix_budget:
        assert len(p) <= prefix_budget and "\n" not in p
    else:
        assert len(p) <= prefix_budget
        assert p == prefix or prefix[len(prefix) - len(p) - 1] == "\n"  # starts a line
    first_line = suffix.split("\n", 1)[0] + ("\n" if "\n" in suffix else "")
    if len(first_line) <= suffix_budget and s:
        assert s == suffix or s.endswith("\n")  # ends a line
