"""The text after the cursor as a draft source: code being re-typed or moved.

A person who retypes a line that is still below the cursor (after cutting it, or while moving
code up), or who completes a call whose arguments follow, makes the model write what the prompt
already holds after its FIM suffix token. The ngram lookup finds such text too, among all of the
prompt; this source looks only there, so that the policy and the ledger judge it on its own
(`suffix`): where it is right the drafts cost nothing, where it is not it is benched alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from spec_lsp.engine.drafters.ngram import TokensLookup

# the FIM roles that end the suffix's text in a prompt (whatever the template's order)
ENDS = ("fim_pre", "fim_mid", "fim_pad", "fim_sep", "fim_rep", "eos", "eot")


class SuffixLookup(TokensLookup):
    name = "suffix"


def after_cursor(prompt: Sequence[int], special: Mapping[str, int]) -> list[int]:
    """The prompt's tokens of the text after the cursor: from its last FIM suffix token to the
    next FIM token ([] without a suffix token)."""
    mark = special.get("fim_suf")
    if mark is None:
        return []
    tokens = list(prompt)
    try:
        start = len(tokens) - tokens[::-1].index(mark)
    except ValueError:
        return []
    ends = {special[role] for role in ENDS if role in special}
    end = next((i for i in range(start, len(tokens)) if tokens[i] in ends), len(tokens))
    return tokens[start:end]
