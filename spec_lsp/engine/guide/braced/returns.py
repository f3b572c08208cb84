"""The type a call gives the variable it is assigned to, for the brace languages' guide: the
result a factory's declaration states (structural.py asks for `x := NewFoo()`,
`const x = Foo.of()`, `var x = Foo.of()`, `let x = a::Foo::new()`).

The callee is found as the language finds it: a Go function of the package or of an imported
package (`pkg.NewFoo`), a TypeScript function of the file or one it imports, a static method
of a workspace class (TypeScript, Java: `Foo.of`), a Rust associated function (`Foo::new`,
`crate::a::Foo::new`). Its declared result (`*Foo`, `: Foo`, `-> Self`) is read in the file
that declares it. A callee not found, or a result that is not a workspace type, types nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from spec_lsp.engine.guide.braced.outline import Outline
from spec_lsp.engine.guide.braced.resolve import Ref, Resolver


def returned(function: str, own: Outline, resolver: Resolver) -> Ref | None:
    """The workspace type the call of `function` ("f", "T.f", "pkg.F", "a::T::f") returns."""
    if "::" in function:
        owner, _, name = function.rpartition("::")
        return _static(owner, f"::{name}", own, resolver)
    if "." in function:
        owner, _, name = function.partition(".")
        if own.language == "go":
            return _declared_result(name, resolver.go_files(own, owner), resolver)
        return _static(owner, f".{name}", own, resolver)
    if own.language == "go":
        return _declared_result(function, resolver.beside(own), resolver)
    if own.language in ("ts", "js"):
        imported = own.imported.get(function)
        if imported is None:
            return _declared_result(function, [own], resolver)
        module = resolver.module_file(own, imported[0])
        there = resolver.outline(module) if module else None
        return _declared_result(imported[1], [there], resolver)
    return None


def _declared_result(name: str, places: Sequence[Outline | None], resolver: Resolver) -> Ref | None:
    for place in places:
        if place is not None and place.returns.get(name):
            return resolver.find(place.returns[name], place)
    return None


def _static(owner: str, member: str, own: Outline, resolver: Resolver) -> Ref | None:
    """A type's static method's result (`T.f`, `T::f`), `T` found from `own`."""
    ref = resolver.find(owner, own)
    there = resolver.outline(ref[0]) if ref is not None else None
    if ref is None or there is None:
        return None
    places = [there] if own.language in ("ts", "js", "java") else [own, *resolver.beside(there)]
    for place in places:
        result = place.returns.get(ref[1] + member)
        if result == "":
            return None  # (overloads of different results)
        if result is not None:
            return ref if result in ("Self", ref[1]) else resolver.find(result, place)
    return None
