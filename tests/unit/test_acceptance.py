"""What becomes of a suggestion, told from the document's text alone (server/acceptance.py), and
its retention checks on a fake clock."""

from __future__ import annotations

from spec_lsp.server.acceptance import Acceptance, distance_in, still_there

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


def test_typing_something_else_moving_away_or_asking_again_is_rejected() -> None:
    acceptance, _clock = tracker()
    acceptance.changed(DOC, BEFORE + "x" + AFTER)
    acceptance.shown(DOC, BEFORE + "x", AFTER, " * 2")
    acceptance.asked(DOC, BEFORE, "x" + AFTER)  # the cursor moved (left)
    acceptance.shown(DOC, BEFORE, "x" + AFTER, "y")
    acceptance.asked(DOC, BEFORE, "x" + AFTER)  # asked again where it was shown: dismissed
    acceptance.shown(DOC, BEFORE, "x" + AFTER, "y")
    acceptance.changed(DOC, "# a new first line\n" + BEFORE + "x" + AFTER)  # edited elsewhere
    assert outcomes(acceptance) == {"accepted": 0, "partial": 0, "typed_through": 0, "rejected": 4}
    assert acceptance.report()["rate"] == 0.0


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
