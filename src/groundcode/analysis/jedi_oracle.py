"""Jedi as an in-process oracle for offline tools (no worker, no deadline):

    repo_dependencies(repo, path, code, first, last)   repository-level names a line range uses
                                                       (benchmark builder, scoring)
    completion_names(root, code, path, line, col)      every name completion offers (slow, faithful)
    offered_in_file(root, code, path, queries)         "would completion at the start of this name
                                                       offer it?" for many names of one file (fast)
    set_dynamic_inference(on)                          Jedi's call-site inference on/off

Used by training/augment.py (marks for <COMP> training data) and evaluation/. `offered_in_file`
performs the lookup of Jedi's completion through Jedi's internals (`jedi.api.completion`,
`jedi.inference`: the only place that does; pinned Jedi in pyproject.toml); its deviations from
the slow form are measured in benchmarks/augment_speed.py. Test: tests/test_augment.py,
tests/test_analysis.py.

Each function's Script text (a scored sample spliced into its file, a truncated file) stays that
call's: `jedi_worker.unsaved` keeps it from becoming the module for later calls in this process,
so an answer does not depend on what the process analysed before (tests/test_executor.py compares
this process's augmentation with a fresh Ray worker's).
"""
from __future__ import annotations

from pathlib import Path

from .jedi_worker import _jedi, unsaved
from .jedi_worker import project as _project


def _inside(path: str | None, root: Path) -> bool:
    if not path:
        return False
    try:
        Path(path).resolve().relative_to(root)
        return True
    except ValueError:
        return False


def repo_dependencies(repo: str | Path, path: str | Path, code: str, first_line: int,
                      last_line: int) -> set[str]:
    """Full names of names/attributes used in lines [first_line, last_line] (1-based, inclusive)
    of `code` (the file's text as if saved at `path`) whose definitions lie inside `repo`.

    Definitions made inside the range itself (locals, parameters) do not count."""
    with unsaved(str(Path(path))):
        return _repo_dependencies(repo, path, code, first_line, last_line)


def _repo_dependencies(repo, path, code: str, first_line: int, last_line: int) -> set[str]:
    jedi = _jedi()
    root = Path(repo).resolve()
    script = jedi.Script(code, path=str(Path(path)), project=_project(str(root)))
    target = Path(path).resolve()
    deps: set[str] = set()
    for name in script.get_names(all_scopes=True, definitions=True, references=True):
        line = name.line
        if line is None or not (first_line <= line <= last_line) or name.is_definition():
            continue
        try:
            defs = script.goto(line, name.column, follow_imports=True)
        except Exception:
            continue
        for d in defs:
            mp = d.module_path
            if not _inside(str(mp) if mp else None, root):
                continue
            if mp and Path(mp).resolve() == target and d.line and first_line <= d.line <= last_line:
                continue  # defined inside the range: a local, not a repository dependency
            if d.type == "param":
                continue
            deps.add(d.full_name or f"{Path(mp).stem}.{d.name}")
    return deps


# -- augmentation (training/augment.py): "would completion at the start of this name offer it?"

def set_dynamic_inference(on: bool) -> bool:
    """Jedi's dynamic inference: searching call sites for the types of unannotated parameters
    and for list/set additions. On by default; off makes augmentation ~1.6x faster and changed
    0.6% of its marks on marshmallow (626 -> 622). Process-wide; returns the previous value."""
    s = _jedi().settings
    before = bool(s.dynamic_params)
    s.dynamic_params = s.dynamic_array_additions = s.dynamic_params_for_other_modules = on
    return before


def completion_names(root: str | None, code: str, path: str, line: int, column: int) -> frozenset:
    """Every name Jedi's completion offers at (line, column) of `code` (keywords excluded).

    The faithful, slow form of the augmentation question: one Script per call (~50-300 ms)."""
    with unsaved(path):
        script = _jedi().Script(code, path=path, project=_project(root))
        return frozenset(c.name for c in script.complete(line, column) if c.type != "keyword")


def offered_in_file(root: str | None, code: str, path: str,
                    queries: list[tuple[int, int, str, int]]) -> list[bool]:
    """For each query (line, column, name, region_end_line): would Jedi's completion at the
    start of `name` (at line, column of `code`) offer `name` if the code from that point to the
    end of its function (region_end_line) were not there yet?

    Fast form of `completion_names(...)` with only the code before the point: one Script for
    the whole file (one parse, one warm inference state for all queries), and for each query
    the lookup that Jedi's completion performs — the same filters, in the same user context —
    asking each filter for this one name (`filter.get`) instead of listing all names
    (`filter.values()`, which flow-checks every name in scope; that is where completion spends
    its time). Definitions that lie between the point and the end of the function are ignored:
    that code does not exist yet when the model writes the name. So:
      * after `expr.`  -> the members of the receiver's inferred values (as `complete_trailer`)
      * a keyword argument `f(key=`  -> resolved through the call's signature (`goto`)
      * after `def`, `class`, `as`, or inside an import statement -> not offered (no completion
        or a module name, never a dependency)
      * any other name -> the scopes visible at the point (as `_complete_global_scope`)
    Deviations from the slow form are measured in benchmarks/augment_speed.py."""
    with unsaved(path):
        return _offered_in_file(root, code, path, queries)


def _offered_in_file(root, code: str, path: str, queries) -> list[bool]:
    from jedi.api.completion import get_flow_scope_node, get_user_context
    from jedi.inference.context import get_global_filters
    from jedi.inference.gradual.conversion import convert_values
    from jedi.inference.helpers import infer_call_of_leaf

    script = _jedi().Script(code, path=path, project=_project(root))
    module_node = script._module_node
    module_context = script._get_module_context()
    target = Path(path).resolve() if path else None
    out: list[bool] = []

    def later(name, pos: tuple[int, int], end_line: int) -> bool:
        tn = getattr(name, "tree_name", None)
        if tn is None:
            return False
        try:
            mp = name.get_root_context().py__file__()
        except Exception:
            mp = None
        if mp is None or target is None or Path(mp).resolve() != target:
            return False
        return pos <= tn.start_pos and tn.start_pos[0] <= end_line

    def any_kept(names, pos, end_line) -> bool:
        return any(not later(n, pos, end_line) for n in names)

    for line, column, name, end_line in queries:
        pos = (line, column)
        try:
            leaf = module_node.get_leaf_for_position(pos, include_prefixes=True)
            if leaf is not None and leaf.start_pos != pos:      # (a, b) ends where b starts
                nxt_leaf = leaf.get_next_leaf()
                if nxt_leaf is not None and nxt_leaf.start_pos == pos:
                    leaf = nxt_leaf
            if leaf is None or leaf.type != "name" or leaf.value != name or leaf.start_pos != pos:
                out.append(False)
                continue
            prev = leaf.get_previous_leaf()
            parent = leaf.parent
            if prev is not None and prev.value in ("def", "class", "as"):
                out.append(False)
                continue
            if parent is not None and (parent.search_ancestor("import_name", "import_from") is not None
                                       or parent.type in ("import_name", "import_from")):
                out.append(False)
                continue
            user_context = get_user_context(module_context, pos)
            if prev is not None and prev.value == "." and prev.type == "operator":
                receiver = prev.get_previous_leaf()
                context = module_context.create_context(receiver)
                values = infer_call_of_leaf(context, receiver)
                hit = False
                for v in list(values) + [c for c in convert_values(values) if c not in values]:
                    for f in v.get_filters(origin_scope=user_context.tree_node):
                        if any_kept(f.get(name), pos, end_line):
                            hit = True
                            break
                    if hit:
                        break
                out.append(hit)
                continue
            nxt = leaf.get_next_leaf()
            if parent is not None and parent.type == "argument" and parent.children[0] is leaf \
                    and nxt is not None and nxt.value == "=":
                names = script.goto(line, column)
                out.append(any(d.type == "param" for d in names))
                continue
            flow_scope_node = get_flow_scope_node(module_node, pos)
            hit = False
            for f in get_global_filters(user_context, pos, flow_scope_node):
                if any_kept(f.get(name), pos, end_line):
                    hit = True
                    break
            out.append(hit)
        except Exception:
            out.append(False)     # Jedi failed on this point: no mark (as a failed completion)
    return out
