"""What the prompt left out of the text before the cursor, taken back out of what the model
writes (the prompt's token healing and the cursor line's trailing blanks): for the in-process
engine and a remote server alike."""

from __future__ import annotations


def heal(generated: str, prefix: str, healed: str = "") -> str:
    """Undo the prompt's omissions: the last token (token healing) and the blanks before the cursor.

    Token healing: a prompt ending in a partial word ("i" of "if") tokenizes it as a whole token
    (" i") the model then continues as if complete. The prompt leaves that token out and the
    first generated token must start with its text (`first_allowed`); the text is removed here.

    Tokenizers merge runs of spaces with the next word (" if", 8 spaces as one token): a prompt
    that ends in the user's indentation makes the model emit one space too many. The prompt
    leaves the cursor line's trailing blanks out; the model writes them, and they are removed
    here. If it chose other indentation, its own leading blanks are dropped instead."""
    if healed and generated.startswith(healed):
        generated = generated[len(healed) :]
    blanks = prefix[len(prefix.rstrip(" \t")) :]
    if not blanks:
        return generated
    if generated.startswith(blanks):
        return generated[len(blanks) :]
    return generated.lstrip(" \t") if generated[:1] in (" ", "\t") else generated
