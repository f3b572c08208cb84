"""The vocabulary's token strings, indexed by the identifier text they begin or continue.

The mask at a trigger point keeps the tokens that, written after what is already there, begin or
continue one of the valid names, or end one and go on with something that is not part of a
name (`(`, `.`, a blank, a newline). A name spans several tokens and a token may span the end of
a name, so the index keys each token by its leading run of identifier characters:

- `whole[s]`: tokens whose text is the identifier run `s` (they continue a name);
- `ending[s]`: tokens that are the run `s` and then a character outside names (they finish a
  name `... + s` and go on); `ending[""]` are the tokens that start outside names;
- the same two behind a separator (`.` for a member, a blank after `import`) in `after_sep`.

A valid name's rest `r` then allows `whole[r[:j]]` for every j and `ending[r]`: len(r) dict
look-ups, whatever the vocabulary's size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

import numpy as np

SEPARATORS = (".", " ")
OPENERS = (" (", " \\")  # after `import`: a parenthesised list, a continued line


def is_name_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def name_run(text: str) -> int:
    """The length of `text`'s leading run of identifier characters."""
    n = 0
    while n < len(text) and is_name_char(text[n]):
        n += 1
    return n


class _Keyed:
    """Token ids by their leading identifier run: whole tokens and tokens that end a name."""

    def __init__(self) -> None:
        whole: defaultdict[str, list[int]] = defaultdict(list)
        ending: defaultdict[str, list[int]] = defaultdict(list)
        self._lists = (whole, ending)
        self.whole: dict[str, np.ndarray] = {}
        self.ending: dict[str, np.ndarray] = {}
        # tokens that end a name, then open a member of it: `s` + "." + a run (`.reset` after a
        # name, `s` = ""): (token, the run after the dot, whether the token ends inside it)
        self.dotted: defaultdict[str, list[tuple[int, str, bool]]] = defaultdict(list)

    def add(self, token: int, text: str) -> None:
        n = name_run(text)
        whole, ending = self._lists
        (whole if n == len(text) and n else ending)[text[:n]].append(token)
        after = text[n + 1 :]
        if text[n : n + 1] == "." and (m := name_run(after)):
            self.dotted[text[:n]].append((token, after[:m], m == len(after)))

    def freeze(self) -> None:
        whole, ending = self._lists
        self.whole = {k: np.asarray(v, dtype=np.int64) for k, v in whole.items()}
        self.ending = {k: np.asarray(v, dtype=np.int64) for k, v in ending.items()}
        self._lists = (defaultdict(list), defaultdict(list))


class NameTokens:
    """The index for one vocabulary (built once per model, ~0.5 s for 150k tokens)."""

    def __init__(self, pieces: Sequence[bytes]) -> None:
        self.pieces = list(pieces)
        self.size = len(self.pieces)
        self.by_text: dict[str, int] = {}  # a token writing each text (the lowest id)
        assign: defaultdict[str, list[int]] = defaultdict(list)  # run + "=" (not "==")
        self.plain = _Keyed()  # every token
        self.after_sep = {sep: _Keyed() for sep in SEPARATORS}  # tokens opening with sep
        self.hashed = _Keyed()  # tokens `#name...`: a TypeScript private member's beginning
        self.opens_with = {sep: np.zeros(self.size, dtype=bool) for sep in SEPARATORS}
        self.sep_only = {sep: np.zeros(self.size, dtype=bool) for sep in SEPARATORS}
        for token, piece in enumerate(self.pieces):
            try:
                text = piece.decode("utf-8")
            except UnicodeDecodeError:
                text = "\ufffd"  # (a part of a character: never part of an ASCII name)
            self.plain.add(token, text)
            self.by_text.setdefault(text, token)
            run = name_run(text)
            if text[run : run + 1] == "=" and text[run + 1 : run + 2] != "=":
                assign[text[:run]].append(token)
            if text[:1] == "#" and text[1:2] and is_name_char(text[1]):
                self.hashed.add(token, text[1:])
            sep = text[:1]
            if sep in self.after_sep:
                self.opens_with[sep][token] = True
                if text == sep or (sep == " " and text in OPENERS):
                    self.sep_only[sep][token] = True
                elif text[1:2] and is_name_char(text[1]):
                    self.after_sep[sep].add(token, text[1:])
        self.plain.freeze()
        self.hashed.freeze()
        self.assign = {k: np.asarray(v, dtype=np.int64) for k, v in assign.items()}
        every = [t for tokens in assign.values() for t in tokens]
        self._assigning = np.asarray(every, dtype=np.int64)
        for keyed in self.after_sep.values():
            keyed.freeze()

    def allowed(
        self,
        written: str,
        names: Iterable[str],
        *,
        sep: str = "",
        members_of: Callable[[str], frozenset[str] | None] | None = None,
    ) -> np.ndarray:
        """Tokens that may come next. `sep` empty: `written` (the name's part so far, maybe
        empty) is followed by a token continuing or ending a name; `sep` given: the separator is
        not written yet, only tokens opening with it are constrained (to sep alone, or sep and
        the beginning of a name). `members_of(name)`: the complete member set of a name the
        token may end (None: not known); a token that ends the name and goes on into one of its
        members (`.reset` after `self._cstate`) must begin one of them."""
        keep = np.zeros(self.size, dtype=bool)
        if sep:
            keep |= ~self.opens_with[sep]
            keep |= self.sep_only[sep]
            keyed = self.after_sep[sep]
            for name in names:
                _mark(keep, keyed, name)
            return keep
        for name in names:
            if not name.startswith(written):
                continue
            rest = name[len(written) :]
            if rest.startswith("#"):  # (`#` alone, or `#` and the name's beginning)
                if "#" in self.by_text:
                    keep[self.by_text["#"]] = True
                _mark(keep, self.hashed, rest[1:])
            else:
                _mark(keep, self.plain, rest)
                if members_of is not None and self.plain.dotted.get(rest):
                    _check_dotted(keep, self.plain.dotted[rest], members_of(name))
        return keep

    def keyword_allowed(self, written: str, names: frozenset[str]) -> np.ndarray:
        """In a call, after the bare name `written` (maybe empty): every token but those that
        end a name the call does not take with `=` (a positional argument stays free)."""
        keep = np.ones(self.size, dtype=bool)
        keep[self._assigning] = False
        for name in names:  # (what the call takes: its parameters, few)
            if name.startswith(written):
                found = self.assign.get(name[len(written) :])
                if found is not None:
                    keep[found] = True
        return keep

    def spell(self, text: str, *, longest: int = 32) -> list[int]:
        """Tokens writing `text`, the longest token first at each step (how BPE vocabularies
        mostly write a name); [] if some character has no token."""
        tokens, i = [], 0
        while i < len(text):
            for j in range(min(len(text), i + longest), i, -1):
                token = self.by_text.get(text[i:j])
                if token is not None:
                    tokens.append(token)
                    i = j
                    break
            else:
                return []
        return tokens


def _check_dotted(
    keep: np.ndarray, dotted: list[tuple[int, str, bool]], members: frozenset[str] | None
) -> None:
    """Forbid the tokens that open a member `members` (complete) does not have."""
    if members is None:
        return
    beginnings = {m[:i] for m in members for i in range(1, len(m) + 1)}
    for token, run, open_end in dotted:
        if run not in (beginnings if open_end else members):
            keep[token] = False


def _mark(keep: np.ndarray, keyed: _Keyed, rest: str) -> None:
    """Allow the tokens that write a beginning of `rest`, or all of it and then leave names."""
    for j in range(1, len(rest) + 1):
        found = keyed.whole.get(rest[:j])
        if found is not None:
            keep[found] = True
    found = keyed.ending.get(rest)
    if found is not None:
        keep[found] = True
