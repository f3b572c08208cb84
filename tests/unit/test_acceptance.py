"""What becomes of a suggestion, told from the document's text alone (server/acceptance.py), and
its retention checks on a fake clock."""

from __future__ import annotations

from spec_lsp.server.acceptance import Acceptance, distance_in, still_there, typed_keys

DOC = "d"
BEFORE = "def area(r):\n    return "
AFTER = "\n\nprint(area(2))\n"
SUGGESTION = "3.14159 * r * r"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def tracker(woken: list[float] | None = None) -> tuple[Acceptance, Clock]:
    clock = Clock()
    acceptance = Acceptance(clock=clock, on_kept=(woken if woken is not None else []).append)
    acceptance.shown(DOC, BEFORE, AFTER, SUGGESTION)
    return acceptance, clock


def outcomes(acceptance: Acceptance) -> dict[str, int]:
    report = acceptance.report()
    return {k: report[k] for k in ("accepted", "partial", "typed_through", "rejected")}


def test_tab_inserting_the_whole_suggestion_is_accepted() -> None:
    acceptance, _clock = tracker()
    acceptance.changed(DOC, BEFORE + SUGGESTION + AFTER)
    assert outcomes(acceptance) == {"accepted": 1, "partial": 0, "typed_through": 0, "rejected": 0}
    assert acceptance.report()["chars_accepted"] == len(SUGGESTION)
    assert acceptance.last_outcome(DOC) == "accepted" and not acceptance.pending


def test_accepting_a_word_is_partial() -> None:
    acceptance, _clock = tracker()
    acceptance.changed(DOC, BEFORE + "3.14159 " + AFTER)
    assert outcomes(acceptance)["partial"] == 1
    assert acceptance.report()["chars_accepted"] == len("3.14159 ")


def test_typing_it_key_by_key_is_typed_through_and_the_rest_is_the_same_suggestion() -> None:
    acceptance, _clock = tracker()
    for n in range(1, 4):  # "3.1"
        acceptance.changed(DOC, BEFORE + SUGGESTION[:n] + AFTER)
        acceptance.asked(DOC, BEFORE + SUGGESTION[:n], AFTER)  # the editor asks at each key
    assert acceptance.pending[DOC].progress == 3 and outcomes(acceptance)["typed_through"] == 0
    # the answer there is the rest, from the typed-through cache: not a second suggestion
    number = acceptance.shown(DOC, BEFORE + "3.1", AFTER, SUGGESTION[3:])
    assert number == 1 and acceptance.report()["shown"] == 1
    acceptance.changed(DOC, BEFORE + "3.1X" + AFTER)  # then something else
    assert outcomes(acceptance)["typed_through"] == 1 and outcomes(acceptance)["rejected"] == 0


def test_typing_something_else_moving_away_or_editing_elsewhere_is_rejected() -> None:
    acceptance, _clock = tracker()
    acceptance.changed(DOC, BEFORE + "x" + AFTER)
    acceptance.shown(DOC, BEFORE + "x", AFTER, " * 2")
    acceptance.asked(DOC, BEFORE, "x" + AFTER)  # the cursor moved (left)
    acceptance.shown(DOC, BEFORE, "x" + AFTER, "y")
    acceptance.changed(DOC, "# a new first line\n" + BEFORE + "x" + AFTER)  # edited elsewhere
    assert outcomes(acceptance) == {"accepted": 0, "partial": 0, "typed_through": 0, "rejected": 3}
    assert acceptance.report()["rate"] == 0.0


def test_asking_again_or_cycling_at_the_place_shown_is_not_a_reject() -> None:
    """VS Code's Alt+] and an Invoked request at the same place ask again where the suggestion
    stands: the same text (or more of it) is the same suggestion; another text replaces it,
    unjudged."""
    acceptance, _clock = tracker()
    acceptance.asked(DOC, BEFORE, AFTER)
    assert acceptance.shown(DOC, BEFORE, AFTER, SUGGESTION) == 1  # the same one
    assert acceptance.shown(DOC, BEFORE, AFTER, SUGGESTION + "\n") == 1  # more of it
    acceptance.asked(DOC, BEFORE, AFTER)
    assert acceptance.shown(DOC, BEFORE, AFTER, "2 * r") == 2  # another answer in its place
    report = acceptance.report()
    assert report["rejected"] == 0 and report["replaced"] == 1 and report["shown"] == 2
    acceptance.changed(DOC, BEFORE + "2 * r" + AFTER)
    assert outcomes(acceptance)["accepted"] == 1 and acceptance.report()["rate"] == 1.0


def test_enter_with_auto_indent_before_a_suggestion_starting_with_a_line_break_is_one_key() -> None:
    acceptance = Acceptance(clock=Clock())
    before, text = "def f(x):", "\n        return x"
    acceptance.shown(DOC, before, AFTER, text)
    acceptance.changed(DOC, before + "\n        " + AFTER)  # Enter: one change, the indent with it
    assert outcomes(acceptance)["partial"] == 0 and acceptance.pending[DOC].progress == 9
    assert acceptance.continues(DOC, before + "\n        ", AFTER, "return x")
    acceptance.changed(DOC, before + "\n        x" + AFTER)  # then something else
    assert outcomes(acceptance) == {"accepted": 0, "partial": 0, "typed_through": 1, "rejected": 0}


def test_keys_batched_in_one_notification_are_typed_through() -> None:
    """Neovim sends the keys typed within its debounce as several changes of one didChange: the
    text grows by two characters at once, told as two keys."""
    acceptance, _clock = tracker()
    acceptance.changed(DOC, BEFORE + "3." + AFTER, keys=typed_keys(["3", "."]))
    assert acceptance.pending[DOC].progress == 2 and acceptance.pending[DOC].typed == 2
    acceptance.changed(DOC, BEFORE + SUGGESTION + AFTER, keys=typed_keys(list(SUGGESTION[2:])))
    assert outcomes(acceptance) == {"accepted": 0, "partial": 0, "typed_through": 1, "rejected": 0}
    assert typed_keys(["3"]) == 0 and typed_keys(["3", "14"]) == 0  # one change; a word in one
    assert typed_keys(["\n    ", "", "x"]) == 2  # Enter with its indent, a deletion, a key


def test_the_rest_that_grew_after_an_early_answer_is_the_same_suggestion() -> None:
    """An early answer showed the first line; the generation went on into the cache, so the
    answer at the next key typed along holds the lines after it too."""
    acceptance = Acceptance(clock=Clock())
    before, first = "class Point:\n", "    def __init__(self, x, y):"
    acceptance.shown(DOC, before, AFTER, first)
    acceptance.changed(DOC, before + " " + AFTER)
    rest = first[1:] + "\n        self.x = x"
    assert acceptance.continues(DOC, before + " ", AFTER, rest)
    assert acceptance.continues(DOC, before + " ", AFTER, first[1:5])  # (or fewer lines of it)
    assert not acceptance.continues(DOC, before + " ", AFTER, "pass")
    assert acceptance.shown(DOC, before + " ", AFTER, rest) == 1


def test_the_clients_command_tells_acceptance_once() -> None:
    acceptance, _clock = tracker()
    assert acceptance.command(1)
    acceptance.changed(DOC, BEFORE + SUGGESTION + AFTER)  # (the edit after the command)
    assert not acceptance.command(1)
    assert outcomes(acceptance)["accepted"] == 1 and acceptance.report()["shown"] == 1


def test_accepted_text_is_looked_for_at_30_s_and_2_min() -> None:
    woken: list[float] = []
    acceptance, clock = tracker(woken)
    text = BEFORE + SUGGESTION + AFTER
    acceptance.changed(DOC, text)
    assert acceptance.next_due() == 1030.0 and woken == [1030.0]  # (the server wakes then)
    documents = {DOC: "# header\n" + text.replace("3.14159", "3.1416")}  # lines above, a tweak
    clock.now = 1029.0
    acceptance.due(documents.get)
    assert acceptance.report()["checked_30s"] == 0
    clock.now = 1030.0
    acceptance.due(documents.get)
    report = acceptance.report()
    assert (report["checked_30s"], report["still_there_30s"]) == (1, 1)
    documents[DOC] = BEFORE + "math.pi * r ** 2" + AFTER  # rewritten
    clock.now = 1200.0
    acceptance.due(documents.get)
    report = acceptance.report()
    assert (report["checked_120s"], report["still_there_120s"]) == (1, 0)
    assert acceptance.next_due() is None and not acceptance.kept


def test_a_closed_document_counts_as_gone() -> None:
    acceptance, clock = tracker()
    acceptance.changed(DOC, BEFORE + SUGGESTION + AFTER)
    clock.now += 31
    acceptance.due(lambda _uri: None)
    assert acceptance.report()["checked_30s"] == 1 and acceptance.report()["still_there_30s"] == 0


def test_edit_distance_within_a_stretch() -> None:
    assert distance_in("abc", "xxabcxx") == 0
    assert distance_in("abc", "xxabxx") == 1
    assert distance_in("kitten", "the sitting cat") == 2
    assert still_there("return a + b", "def f(a, b):\n    return a+b\n", 17)
    assert not still_there("return a + b", "def f(a, b):\n    pass\n", 17)


def test_an_auto_closed_bracket_and_typing_over_it_are_keys_typed_along() -> None:
    """VS Code's auto-close: `(` inserts `()` in one change, the cursor between; typing `)`
    then moves over it, the text unchanged (the next request says where the cursor is)."""
    acceptance = Acceptance(clock=Clock())
    before, after = "def foo", "\n"
    acceptance.shown(DOC, before, after, "(x):")
    acceptance.changed(DOC, before + "()" + after)
    assert acceptance.pending[DOC].progress == 1 and acceptance.pending[DOC].after == ")\n"
    acceptance.asked(DOC, before + "(", ")" + after)
    acceptance.changed(DOC, before + "(x)" + after)
    acceptance.asked(DOC, before + "(x", ")" + after)
    acceptance.changed(DOC, before + "(x)" + after)  # `)` typed over: the same text
    acceptance.asked(DOC, before + "(x)", after)
    assert acceptance.pending[DOC].progress == 3 and acceptance.pending[DOC].typed == 3
    acceptance.changed(DOC, before + "(x):" + after)
    assert outcomes(acceptance) == {"accepted": 0, "partial": 0, "typed_through": 1, "rejected": 0}
