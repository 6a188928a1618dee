"""Names a lambda or a comprehension binds for itself: a lambda's parameters and a comprehension's
targets, which Python 3 reads nowhere outside it. The names monitor leaves them out of what a
later line may read (python_scope.visible_names for the file around the cursor, `LineUses.inner`
for the lines the completion writes).

    inner_only(region, cursor)   # names `region` writes only inside such scopes (tokens)
    bound_inside(leaf)           # is this parso definition a lambda's parameter or a
                                 # comprehension's target?
    read_inside(leaf)            # is this parso load inside a scope that binds it?
    leaves(node)                 # a parso tree's leaves (and error nodes), in order
Test: tests/test_names_monitor.py.
"""
from __future__ import annotations

from ..pycode import lex


def bound_inside(leaf) -> bool:
    """Does the definition `leaf` (a parso name) bind a lambda's parameter or a comprehension's
    target (not a walrus inside one: that binds outside)?"""
    p = leaf.parent
    if p is not None and p.type == "param" and p.parent is not None \
            and p.parent.type in ("lambdef", "lambdef_nocond"):
        return True
    child = leaf
    while p is not None and p.type not in ("funcdef", "classdef", "file_input", "suite", "simple_stmt"):
        if p.type == "sync_comp_for" and len(p.children) > 1 and child is p.children[1]:
            return True
        p, child = p.parent, p
    return False


def read_inside(leaf) -> bool:
    """Is the load `leaf` (a parso name) inside a lambda that takes it or a comprehension that
    binds it?"""
    p, name = leaf.parent, leaf.value
    while p is not None and p.type not in ("funcdef", "classdef", "file_input", "suite", "simple_stmt"):
        if p.type in ("lambdef", "lambdef_nocond") \
                and any(c.type == "param" and c.name.value == name for c in p.children):
            return True
        comps = [c for c in getattr(p, "children", ()) if c.type in ("sync_comp_for", "comp_for")]
        while comps:
            c = comps.pop()
            if c.type == "comp_for":             # `async for`: its sync_comp_for inside
                comps.extend(k for k in c.children if k.type == "sync_comp_for")
                continue
            if any(n.type == "name" and n.value == name for n in leaves(c.children[1])):
                return True
            comps.extend(k for k in c.children[2:] if k.type in ("sync_comp_for", "comp_for"))
        p = p.parent
    return False


def leaves(node):
    """The leaves of a parso tree in order, each error node also yielded before its own (the
    scope reader of python_scope.py looks for them)."""
    stack = [node]
    while stack:
        n = stack.pop()
        kids = getattr(n, "children", None)
        if kids is None:
            yield n
        else:
            if n.type == "error_node":
                yield n
            stack.extend(reversed(kids))


def inner_only(region: str, cursor: int) -> frozenset:
    """The names `region` writes only inside a lambda that takes them as parameters or a
    comprehension that binds them as targets (`val` of `key=lambda val: …`, `q` of `[q for q in
    xs]`), where that lambda or comprehension is closed and does not hold the cursor: Python 3
    reads them nowhere else (pyxtuml's `val`, session 36). Read from tokens, as file_names is
    (parso took 20× longer on a long method); a name written anywhere else counts as outside."""
    toks = []                             # (kind, start, end, text); a line break as "nl"
    for kind, st, en in lex(region):
        if kind == "ws" and ("\n" in region[st:en] or "\r" in region[st:en]):
            toks.append(("nl", st, en, ""))
        elif kind not in ("ws", "comment"):
            toks.append((kind, st, en, region[st:en]))
    depth = [0] * (len(toks) + 1)         # brackets open before each token
    opener = [-1] * len(toks)             # the innermost open bracket before each token
    closer: dict[int, int] = {}           # an open bracket's token -> its closing token
    stack: list[int] = []
    for i, (_k, _s, _e, t) in enumerate(toks):
        opener[i] = stack[-1] if stack else -1
        if t in ("(", "[", "{"):
            stack.append(i)
        elif t in (")", "]", "}") and stack:
            closer[stack.pop()] = i
        depth[i + 1] = len(stack)
    scopes = []                           # (start, end, names): closed scopes only
    for i, (kind, _s, _e, t) in enumerate(toks):
        found = None
        if kind == "name" and t == "lambda":
            found = _lambda_scope(toks, depth, i)
        elif kind == "name" and t == "for" and opener[i] in closer:   # (a `for` statement has none)
            o = opener[i]
            found = (toks[o][1], toks[closer[o]][2], _targets(toks, depth, i))
        if found is not None and not found[0] <= cursor <= found[1]:
            scopes.append(found)
    if not scopes:
        return frozenset()
    inner, outer = set(), set()
    for i, (kind, st, _e, t) in enumerate(toks):
        if kind != "name" or i and toks[i - 1][3] == ".":
            continue
        (inner if any(lo <= st < hi and t in names for lo, hi, names in scopes) else outer).add(t)
    return frozenset(inner - outer)


def _lambda_scope(toks, depth, i):
    """(start, end, parameters) of the lambda whose keyword is toks[i]; None if it does not end."""
    d, params, expect, j = depth[i], set(), True, i + 1
    while j < len(toks) and not (depth[j] == d and toks[j][3] == ":"):
        kind, t = toks[j][0], toks[j][3]
        if depth[j] < d or kind == "nl" and d == 0:
            return None
        if depth[j] == d and t == ",":
            expect = True
        elif depth[j] == d and t == "=":
            expect = False                # a default: evaluated outside the lambda
        elif kind == "name" and expect and depth[j] == d:
            params.add(t)
            expect = False
        j += 1
    for k in range(j + 1, len(toks)):
        kind, t = toks[k][0], toks[k][3]
        if depth[k] == d and (t in (",", ";", ")", "]", "}") or kind == "nl" and d == 0
                              or kind == "name" and t == "for"):
            return toks[i][1], toks[k][1], params
    return None


def _targets(toks, depth, i) -> set:
    """The names a comprehension's `for` (toks[i]) binds: up to its `in`."""
    out, d = set(), depth[i]
    for k in range(i + 1, len(toks)):
        kind, t = toks[k][0], toks[k][3]
        if depth[k] == d and kind == "name" and t == "in":
            break
        if kind == "name":
            out.add(t)
    return out
