"""The names monitor in TypeScript (issue 40): tree-sitter's reading of loads and bindings, and
in decoding a name that no scope holds is redone as one the language server lists, while
globals, parameters, locals and the file's names pass. Fixture: tests/fixtures/tsshop."""
from __future__ import annotations

from pathlib import Path

import pytest

from groundcode.analysis import lsp_servers
from groundcode.config import MonitorConfig, SamplingConfig
from groundcode.context import cursor_context
from groundcode.languages.typescript_scope import file_names, read

REPO = Path(__file__).parent / "fixtures" / "tsshop"


def test_read_tells_loads_from_bindings():
    code = ("function h(p: number, q = dflt, ...rest: R[]): void {\n"
            "  const {d, e: f, ...g} = obj;\n"
            "  for (const [i, j] of items) { console.log(i, j, unknownName); }\n"
            "  try {} catch (err) {}\n"
            "  const o = { key: val, short };\n"
            "  let fn = (a1, {b1}) => a1 + b1;\n"
            "  w = 5;\n"
            "  const inc = foo(\n")
    start = code.index("  const {d")
    u = read(code, start, len(code))
    loads = [n for n, _ in u.loads]
    assert loads == ["obj", "items", "console", "i", "j", "unknownName", "val", "short", "a1", "b1", "w"]
    assert {"d", "f", "g", "i", "j", "err", "o", "fn", "a1", "b1"} <= u.binds
    assert "key" not in loads and "log" not in loads                    # members and keys
    assert code[u.open_at:].startswith("inc")                           # unfinished: judged later
    for name, off in u.loads:
        assert code[off:off + len(name)] == name


def test_file_names_leaves_out_members():
    assert {"Registry", "item"} <= file_names("x.register(item); new Registry()")
    assert "register" not in file_names("x.register(item)")


def test_visible_names_leave_out_other_functions_parameters_and_bodies():
    from groundcode.languages.typescript_scope import visible_names
    code = ("const top = 1;\nfunction one(p: number) { const mine = 2; return p; }\n"
            "class K { m(q: string) { let inner = q; return () => { const deep = 1; }; } }\n"
            "function two(w) { let here = 1;\n  \n}\nfunction after(v) { const later = v; }\n")
    at = code.index("\n  \n") + 3
    seen = visible_names(code, at)
    assert {"top", "one", "K", "two", "w", "here", "after"} <= seen
    assert not {"mine", "p", "q", "inner", "deep", "later", "v"} & seen
    # a function the text leaves unfinished at the cursor holds it
    head = "function outer(a) { const b = 1;\n  "
    assert {"a", "b"} <= visible_names(head, len(head))


def test_visible_names_leave_out_comments_strings_and_types():
    from groundcode.languages.typescript_scope import visible_names
    code = ("interface Mappable { map: (pos: number, assoc?: number) => number; reducerName: string;\n"
            "  f(x: number): void }\ntype Z = { q: number }\nfunction over(a: number): void;\n"
            "class Base {}\nclass Kid extends Base { constructor(readonly inner: number) { super() } }\n"
            "// `commented` in a comment\nconst s = 'quoted', t = `x ${spliced} z`, o = { key: v, short };\n"
            "function host(m: Mappable) {\n  \n}\n")
    at = code.index("{\n  \n") + 4
    seen = visible_names(code, at)
    assert {"Base", "Kid", "over", "s", "t", "o", "v", "short", "spliced", "host", "m"} <= seen
    assert not {"pos", "assoc", "reducerName", "x", "q", "a", "inner", "commented", "quoted", "key"} & seen
    # a type's name stays: a broken parse reads `f<T>(x)` as comparisons, T a value
    assert {"Mappable", "Z"} <= seen
    generic = "function g<TSource>(v) {\n  return f<TSource>(v)\n"
    assert "TSource" in visible_names(generic, len(generic))
    # a line cut inside brackets (`this.appendMap(mapping._maps[`) broke the parse of the rest:
    # a later method's parameters read as loose words; the brackets are closed where that reads better
    cut = ("class Mapping {\n  appendInverted(mapping: Mapping) {\n    this.appendMap(mapping._maps[\n  }\n"
           "  /// Map `pos` through\n  _map(pos: number, assoc: number) { return pos + assoc }\n}\n")
    seen = visible_names(cut, cut.index("_maps[") + len("_maps["))
    assert "mapping" in seen and not {"pos", "assoc", "Map", "through"} & seen, seen
    assert "_" not in seen                 # the stand-in name the brackets were closed after
    # where the file read whole has errors, each top-level statement is read on its own too
    # (createSlice.ts, one error node from its first line to its last: every word counted); the
    # statements split at line starts at bracket depth 0, never inside a string or a template
    from groundcode.languages.typescript_scope import _chunks
    spoilt = ("export interface Makers<S> {\n  <R>(p: R): Def<S, R>\n  <\n    R,\n    C extends Cfg = {},\n"
              "  >(\n    p: R,\n  ): Def<S, R>\n}\nconst t = `a\nb`\nfunction here(context: number) {\n  if (\n}\n"
              "function later({ zzName }: Details, zzOther: number) {\n  use(zzName, zzOther)\n}\n")
    heads = [spoilt[a:b].split("\n", 1)[0] for a, b in _chunks(spoilt, spoilt.index("if (") + 4)]
    assert heads == ["export interface Makers<S> {", "const t = `a", "function here(context: number) {",
                     "function later({ zzName }: Details, zzOther: number) {"], heads
    seen = visible_names(spoilt, spoilt.index("if (") + 4)
    assert {"context", "here", "later", "t"} <= seen and not {"zzName", "zzOther"} & seen, seen
    # the parameters of an arrow function the cursor's line leaves broken hold the cursor
    arrow = "const r = make({\n  getRuntime: (getState) => runtimeBy.\n})\n"
    assert "getState" in visible_names(arrow, arrow.index("runtimeBy.") + len("runtimeBy."))
    # what tree-sitter cannot read counts its loose words: a superset where the grammar fails
    broken = "const ok = 1;\nfoo bar baz ) ( qux\nfunction g() {\n  \n}\n"
    assert {"ok", "qux"} <= visible_names(broken, broken.index("{\n  \n") + 4)


@pytest.fixture(scope="module")
def ts():
    return lsp_servers.install("typescript")


def _run(tiny_lm, target, max_new=40):
    from scripted import scripted_lm, planted
    from groundcode.api import Generator
    ctx = cursor_context(REPO / "src" / "cart.ts", 9, 0, REPO)
    with Generator(scripted_lm(tiny_lm, planted(target)), MonitorConfig(enabled=True, names=True,
                                                                        reproducible=True)) as gen:
        return gen.run([ctx], SamplingConfig(max_new_tokens=max_new))[0][0]


def test_an_invented_name_is_redone_as_one_in_scope(ts, tiny_lm):
    out = _run(tiny_lm, "    const n = itme;\n")
    recs = [t for t in out.triggers if t.kind == "name"]
    assert len(recs) == 1 and recs[0].rolled_back and not recs[0].failed_open, recs
    assert "itme" not in out.completion and recs[0].chosen != "itme", out.completion


def test_globals_parameters_and_the_files_names_pass(ts, tiny_lm):
    target = "    const n = Math.max(item.length, 2);\n    console.log(n, Registry, JSON);\n"
    out = _run(tiny_lm, target, max_new=60)
    assert out.completion.startswith(target.rstrip("\n")), out.completion
    assert not [t for t in out.triggers if t.kind == "name"], out.triggers     # none missing, none left open


def _ts_repo(root: Path) -> Path:
    """A TypeScript project with installed packages (fixture files written here: ours)."""
    (root / "src").mkdir(parents=True)
    (root / "package.json").write_text('{"name": "app", "dependencies": {"leftpad": "1.0.0", '
                                       '"not-installed": "2.0.0"}}')
    (root / "tsconfig.json").write_text('{"compilerOptions": {"strict": true, "module": "esnext", '
                                        '"moduleResolution": "bundler", "noEmit": true}}')
    pad = root / "node_modules" / "leftpad"
    pad.mkdir(parents=True)
    (pad / "package.json").write_text('{"name": "leftpad", "types": "index.d.ts"}')
    (pad / "index.d.ts").write_text("export declare function leftpad(s: string, n: number): string;\n")
    util = root / "node_modules" / "@acme" / "util"
    util.mkdir(parents=True)
    (util / "package.json").write_text('{"name": "@acme/util", "exports": {".": "./index.js", '
                                       '"./sub": "./sub.js", "./feat/*": "./feat/*.js"}}')
    (util / "index.d.ts").write_text("export declare const one: number;\n")
    (root / "src" / "helper.ts").write_text("export const help = 1;\n")
    (root / "src" / "app.ts").write_text('import { help } from "./helper";\n\nexport const x = help;\n')
    return root


def test_module_specifiers_resolve_on_the_file_system_alone(tmp_path):
    from groundcode.languages.typescript_modules import TsModuleIndex, TsResolved
    root = _ts_repo(tmp_path / "app")
    idx = TsModuleIndex(root)
    app = Path("src/app.ts")
    kinds = {spec: idx.resolve(spec, app).kind for spec in (
        "./helper", "./helper.js", "../src/helper", "./nope", "leftpad", "@acme/util", "@acme/util/sub",
        "@acme/util/feat/x", "@acme/util/other", "fs", "node:fs/promises", "lefpad", "not-installed",
        "#internal", "./x?raw")}
    assert kinds == {"./helper": "ok", "./helper.js": "ok", "../src/helper": "ok", "./nope": "missing",
                     "leftpad": "ok", "@acme/util": "ok", "@acme/util/sub": "ok", "@acme/util/feat/x": "ok",
                     "@acme/util/other": "missing", "fs": "ok", "node:fs/promises": "ok", "lefpad": "missing",
                     "not-installed": "unknown", "#internal": "unknown", "./x?raw": "unknown"}
    assert idx.resolve("not-installed", app).why == "declared dependency not installed"
    cands = idx.candidates(app)
    assert {"leftpad", "@acme/util", "./helper", "fs", "node:fs"} <= cands and "./app" not in cands
    # an invented module's replacement must hold the names `{ … }` took before it
    assert idx.candidates_for(app, ["one"]) == {"@acme/util"}
    assert idx.candidates_for(app, ["help"]) == {"./helper"}
    # no module exports both: those exporting one of them
    assert idx.candidates_for(app, ["leftpad", "one"]) == {"leftpad", "@acme/util"}
    assert idx.candidates_for(app, ["nowhere"]) == cands
    # a path as a command line gives it, relative to the current directory, not the root
    import os
    cwd = os.getcwd()
    try:
        os.chdir(root / "src")
        assert idx.resolve("./helper", Path("app.ts")).kind == "ok"
        assert idx.resolve("leftpad", Path("app.ts")).kind == "ok"
    finally:
        os.chdir(cwd)
    # a mapping the file system cannot follow, or nothing installed yet: fail open
    (root / "tsconfig.json").write_text('{// comments and trailing commas, as tsc reads them\n'
                                        '"compilerOptions": {"baseUrl": ".", "paths": {"@/*": ["src/*"],},}}')
    assert TsModuleIndex(root).resolve("@/helper", app).why == "tsconfig paths"
    assert TsModuleIndex(root).resolve("src/helper", app).kind == "ok"        # under baseUrl
    assert TsModuleIndex(root).resolve("redux-invented", app).kind == "missing"   # no pattern
    (root / "package.json").write_text('{"name": "@me/app", "exports": {"./feat": "./src/helper.ts"}}')
    assert TsModuleIndex(root).resolve("@me/app", app).kind == "ok"          # itself, by name
    assert TsModuleIndex(root).resolve("@me/app/feat", app).kind == "ok"
    assert TsModuleIndex(root).resolve("@me/app/nope", app).kind == "missing"
    (root / "tsconfig.json").write_text('{"extends": "./base.json", "compilerOptions": {}}')
    assert TsModuleIndex(root).resolve("redux-invented", app).why == "tsconfig paths"   # not followed
    bare = tmp_path / "bare"
    (bare / "src").mkdir(parents=True)
    assert TsModuleIndex(bare).resolve("lefpad", Path("src/a.ts")).why == "no node_modules"
    # nothing installed yet, but a package.json says what the package uses: an undeclared
    # package is missing, a declared one unknown, and the declared ones are candidates
    (bare / "package.json").write_text('{"name": "app", "dependencies": {"left-pad": "^1"}, '
                                       '"devDependencies": {"@types/node": "^20"}}')
    idx = TsModuleIndex(bare)
    assert idx.resolve("lefpad", Path("src/a.ts")) == TsResolved("missing", "lefpad")
    assert idx.resolve("left-pad", Path("src/a.ts")).why == "declared dependency not installed"
    assert idx.resolve("fs", Path("src/a.ts")).kind == "ok"
    assert "left-pad" in idx.candidates(bare / "src" / "a.ts") and "@types/node" not in idx.candidates(bare / "src" / "a.ts")


def test_an_invented_module_is_redone_among_the_project_modules_that_export_its_names(tmp_path):
    """rxjs's shape (fixture files written here): src/observable/bind.ts imports its types from
    `../types`; a sibling `./bindInternals` imports the same names. The candidates reach the
    parent's modules and one level into directories; a module that exports the names comes
    before one that merely mentions them."""
    from groundcode.languages.typescript_modules import TsModuleIndex
    root = tmp_path / "rx"
    (root / "src" / "observable").mkdir(parents=True)
    (root / "src" / "util").mkdir()
    (root / "src" / "operators" / "deep").mkdir(parents=True)
    (root / "package.json").write_text('{"name": "rx"}')
    (root / "src" / "types.ts").write_text("export interface SchedulerLike { now(): number }\n"
                                           "export type OperatorFunction<T, R> = (x: T) => R;\n")
    (root / "src" / "util" / "isFunction.ts").write_text("export function isFunction(x: any) { return true; }\n")
    (root / "src" / "operators" / "map.ts").write_text("export const map = 1;\n")
    (root / "src" / "operators" / "deep" / "far.ts").write_text("export const far = 1;\n")
    (root / "src" / "observable" / "bindInternals.ts").write_text(
        "import { SchedulerLike, OperatorFunction } from '../types';\nexport const x = 1;\n")
    me = root / "src" / "observable" / "bind.ts"
    me.write_text("import { SchedulerLike } from '../types';\n")
    idx = TsModuleIndex(root)
    cands = idx.candidates(me)
    assert {"./bindInternals", "../types", "../util/isFunction", "../operators/map"} <= cands
    assert not {"./bind", "../observable/bind", "../operators/deep/far", "../../package"} & cands
    assert idx.resolve("../util/isFunction", me).kind == "ok"
    assert idx.candidates_for(me, ["SchedulerLike", "OperatorFunction"]) == {"../types"}
    assert idx.candidates_for(me, ["isFunction"]) == {"../util/isFunction"}
    assert idx.candidates_for(me, ["x"]) == {"./bindInternals"}
    # none exports both: the one exporting the most of them (the other name is redone next)
    assert idx.candidates_for(me, ["isFunction", "isInvented"]) == {"../util/isFunction"}
    assert idx.candidates_for(me, ["nowhere"]) == cands
    # a file at the project's root offers nothing above the root
    top = root / "index.ts"
    top.write_text("")
    assert not any(c.startswith("../") for c in idx.candidates(top))
    assert "./src/types" in idx.candidates(top)


def test_module_uses_reads_every_form_of_import():
    from groundcode.languages.typescript_scope import module_uses
    code = ('import { a } from "p/q";\nimport x = require("y");\nexport * from "./z";\n'
            'const m = import("dyn");\nconst r = require(\'req\');\nimport "side";\n'
            'const t = require(`t${x}`);\nimport { b } from "unfinished')
    got = module_uses(code, 0, len(code))
    assert [u.spec for u in got] == ["p/q", "y", "./z", "dyn", "req", "side"]
    assert all(code[u.at:u.at + len(u.spec)] == u.spec for u in got)
    assert [n for n, _ in got[0].names] == ["a"] and code[got[0].stmt:].startswith("import { a }")


def _import_at_app_start(tiny_lm, tmp_path, target: str):
    """The model planted to write `target` at the start of _ts_repo's src/app.ts, names on."""
    from scripted import scripted_lm, planted
    from groundcode.api import Generator
    root = _ts_repo(tmp_path)
    ctx = cursor_context(root / "src" / "app.ts", 1, 0, root)
    with Generator(scripted_lm(tiny_lm, planted(target)), MonitorConfig(enabled=True, names=True,
                                                                        reproducible=True)) as gen:
        return gen.run([ctx], SamplingConfig(max_new_tokens=24))[0][0]


def test_an_invented_module_is_redone_as_one_that_resolves(ts, tiny_lm, tmp_path):
    out = _import_at_app_start(tiny_lm, tmp_path, 'import { leftpad } from "lefpad";\n')
    recs = [t for t in out.triggers if t.kind == "import"]
    assert recs and recs[0].rolled_back and not recs[0].failed_open, out.triggers
    assert '"lefpad"' not in out.completion, out.completion
    assert out.completion.startswith('import { leftpad } from "'), out.completion


def test_a_name_the_module_does_not_export_is_redone_as_an_export(ts, tiny_lm, tmp_path):
    out = _import_at_app_start(tiny_lm, tmp_path, 'import { leftpd } from "leftpad";\n')
    recs = [t for t in out.triggers if t.kind == "import"]
    assert [(r.reason, r.rolled_back, r.failed_open, r.chosen) for r in recs] == \
        [("not exported", True, False, "leftpad")], out.triggers
    assert out.completion.startswith('import { leftpad } from "leftpad"'), out.completion


def test_after_a_name_is_redone_the_module_it_was_redone_for_stays(ts, tiny_lm, tmp_path):
    # the model writes `{ leftpd } from "leftpad"`; leftpd is redone as leftpad (an export of
    # leftpad), and the model would then go on `from "./helper"` (which exports no leftpad): the
    # module string is redone as "leftpad", the module the name was chosen from
    from scripted import scripted_lm
    from groundcode.api import Generator
    first, then = 'import { leftpd } from "leftpad";\n', 'import { leftpad } from "./helper";\n'

    def rules(text):
        want = first if not text.startswith("import { leftpad") else \
            first.replace("leftpd", "leftpad") if text.startswith('import { leftpad } from "l') else then
        return want[len(text):] or None if want.startswith(text) else None
    root = _ts_repo(tmp_path)
    ctx = cursor_context(root / "src" / "app.ts", 1, 0, root)
    with Generator(scripted_lm(tiny_lm, rules), MonitorConfig(enabled=True, names=True, reproducible=True)) as gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=24))[0][0]
    reasons = [t.reason for t in out.triggers if t.kind == "import" and t.rolled_back]
    assert reasons == ["not exported", "module of the names taken"], out.triggers
    assert out.completion.startswith('import { leftpad } from "leftpad"'), out.completion


def test_names_taken_before_a_redone_module_are_judged_against_it(ts, tiny_lm, tmp_path):
    # `{ zed } from "lefpad"`: no module holds zed, so the module is redone among every one that
    # resolves (the model picks leftpad); zed, which leftpad does not export, is then redone
    # among leftpad's exports, and the module stays leftpad (before: TS2305, the benchmark's
    # most common import error with the monitor on)
    from scripted import scripted_lm
    from groundcode.api import Generator
    first, then = 'import { zed } from "lefpad";\n', 'import { zed } from "leftpad";\n'
    last = 'import { leftpad } from "leftpad";\n'

    def rules(text):
        for want in (first, then, last):
            if want.startswith(text):
                return want[len(text):] or None
        return None
    root = _ts_repo(tmp_path)
    ctx = cursor_context(root / "src" / "app.ts", 1, 0, root)
    with Generator(scripted_lm(tiny_lm, rules), MonitorConfig(enabled=True, names=True, reproducible=True)) as gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=24))[0][0]
    # (the module's record went with the text it judged, rolled back past)
    reasons = [(t.reason, t.chosen) for t in out.triggers if t.kind == "import" and t.rolled_back]
    assert reasons == [("not exported", "leftpad")], out.triggers
    assert out.completion.startswith(last.rstrip("\n")), out.completion


def test_a_name_in_a_statement_the_file_finishes_after_the_cursor_is_judged(ts, tiny_lm, tmp_path):
    # the cursor inside a multi-line ternary: the generated line never finishes the statement
    # (the file's next line does), so it was never judged (`typeOf(x)`, TS2552, on the benchmark)
    from scripted import scripted_lm, planted
    from groundcode.api import Generator
    root = _ts_repo(tmp_path)
    (root / "src" / "app.ts").write_text(
        'import { help } from "./helper";\n\nexport function pick(x: number | string): number {\n'
        '  const n =\n    typeof x === "string"\n      ?\n      : x;\n  return n;\n}\n')
    ctx = cursor_context(root / "src" / "app.ts", 6, 7, root)
    with Generator(scripted_lm(tiny_lm, planted(" helpp\n")), MonitorConfig(enabled=True, names=True,
                                                                          reproducible=True)) as gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=12))[0][0]
    recs = [t for t in out.triggers if t.kind == "name"]
    assert recs and recs[0].rolled_back and recs[0].chosen != "helpp", (out.completion, out.triggers)
    assert "helpp" not in out.completion, out.completion


def test_a_redone_specifier_ends_at_its_quote_never_at_an_escape(ts, tiny_lm, tmp_path):
    # `"./context\n"` on the benchmark: the redone specifier was complete, then the model wrote
    # `\n` inside the string (an escape: a module named with a line break, TS2307)
    from scripted import scripted_lm
    from groundcode.api import Generator
    first = 'import { leftpad } from "lefpad";\n'

    def rules(text):
        if first.startswith(text):
            return first[len(text):] or None
        if text.startswith('import { leftpad } from "leftpad'):
            return '\\n";\n'[len(text) - len('import { leftpad } from "leftpad'):] or None
        return None
    root = _ts_repo(tmp_path)
    ctx = cursor_context(root / "src" / "app.ts", 1, 0, root)
    with Generator(scripted_lm(tiny_lm, rules), MonitorConfig(enabled=True, names=True, reproducible=True)) as gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=24))[0][0]
    assert out.completion.startswith('import { leftpad } from "leftpad"'), out.completion


def test_another_functions_local_is_redone(ts, tiny_lm, tmp_path):
    # `secret` is a local of another function: the file names it, yet it is not in scope here
    # (it was let through by the file's names, a superset: TS2304 on the held-out recipe)
    from scripted import planted, scripted_lm
    from groundcode.api import Generator
    root = _ts_repo(tmp_path)
    (root / "src" / "two.ts").write_text("export function keeper(): number {\n  const secret = 41;\n  return secret;\n}\n\n"
                                         "export function user(item: number): number {\n  \n}\n")
    ctx = cursor_context(root / "src" / "two.ts", 7, 0, root)
    with Generator(scripted_lm(tiny_lm, planted("  return secret + item;\n")),
                   MonitorConfig(enabled=True, names=True, reproducible=True)) as gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=24))[0][0]
    recs = [t for t in out.triggers if t.kind == "name"]
    assert recs and recs[0].rolled_back and recs[0].chosen != "secret", (out.completion, recs)
    assert "secret" not in out.completion, out.completion


def test_an_answer_without_the_libs_globals_is_no_scope_and_judges_nothing(ts, tiny_lm, tmp_path):
    # the cursor's line emptied before an `else`: the server answered Error's members (cause,
    # message, name, stack), and `Object` was judged missing (tstl, the name-kind audit)
    from scripted import scripted_lm, planted
    from groundcode.api import Generator
    root = _ts_repo(tmp_path)
    (root / "src" / "app.ts").write_text(
        "export class Oops extends Error {\n  constructor(message: string) {\n    super(message);\n"
        "    const proto = new.target.prototype;\n    if (\n    else (this as any).__proto__ = proto;\n"
        "  }\n}\n")
    ctx = cursor_context(root / "src" / "app.ts", 5, 8, root)
    with Generator(scripted_lm(tiny_lm, planted("Object.setPrototypeOf) Object.setPrototypeOf(this, proto);\n")),
                   MonitorConfig(enabled=True, names=True, reproducible=True)) as gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=80))[0][0]
    assert out.completion.startswith("Object.setPrototypeOf) Object.setPrototypeOf(this"), out.completion
    assert not [t for t in out.triggers if t.kind == "name" and t.rolled_back], out.triggers


def test_a_name_only_an_import_would_bring_is_not_in_scope(ts, tiny_lm, tmp_path):
    # the server offers other modules' exports at a name start, each with the import it would
    # add (auto-imports: `new StatementSync(` from node:sqlite went through on the benchmark)
    from scripted import scripted_lm, planted
    from groundcode.api import Generator
    root = _ts_repo(tmp_path)
    (root / "src" / "other.ts").write_text("export const onlyThere = 1;\n")
    (root / "src" / "app.ts").write_text('import { help } from "./helper";\n\nexport const x = help;\n\n')
    ctx = cursor_context(root / "src" / "app.ts", 4, 0, root)
    with Generator(scripted_lm(tiny_lm, planted("export const y = onlyThere;\n")),
                   MonitorConfig(enabled=True, names=True, reproducible=True)) as gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=40))[0][0]
    recs = [t for t in out.triggers if t.kind == "name"]
    assert recs and recs[0].rolled_back and recs[0].chosen != "onlyThere", (out.completion, out.triggers)
    assert "onlyThere" not in out.completion, out.completion



def test_a_predefined_type_as_a_calls_type_argument_passes(tiny_lm, tmp_path):
    # the row's file ends inside the body being written, and tree-sitter then reads
    # `read<boolean>(…)` as comparisons, `boolean` a load; TypeScript's list of names in scope holds
    # no type keyword (a false block on a held-out package, session 30): the predefined types are
    # no names to miss (a value `boolean` is TS2693, not TS2304)
    from fake_analyzer import FakeBase
    from groundcode.analysis.base import Analysis
    from groundcode.analysis.wait import PatientWait
    from groundcode.context import CodeContext
    from groundcode.decoding.guides.base import RowView, as_rollback
    from groundcode.decoding.guides.names_ts import TsNamesMonitor
    from groundcode.decoding.vocab import VocabIndex

    class Scope(FakeBase):      # a scope's list: the lib's globals, the file's function, no keywords
        def members(self, code, path, line, column, *, receiver, cache_key):
            return Analysis(receiver, frozenset({"Object", "globalThis", "undefined", "console", "read", "key"}))

    before = "function read<T>(key: string): T | undefined {\n  return undefined\n}\n\n" \
             "export class User {\n  #load(key: string): void {\n    "
    assert ("boolean", len(before) + 16) in read(before + "const on = read<boolean>('on', key)\n", len(before),
                                                   len(before) + 36).loads
    (tmp_path / "gen.ts").write_text(before + "\n  }\n}\n")
    ctx = CodeContext(path=tmp_path / "gen.ts", repo=tmp_path, before=before, after="\n  }\n}\n",
                      lex_prefix=before, starts_at_line=False)
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    row = RowView(0, ctx, vocab)
    g = TsNamesMonitor(Scope(), waits=PatientWait(), reproducible=True)
    g.reset(row)
    blocks = []
    for t in tiny_lm.tokenizer.encode("const on = read<boolean>('on', key)\n    const n = read<number>(key)\n    ",
                                      add_special_tokens=False):
        row.tokens.append(t)
        row.text += vocab.texts[t]
        row.ends.append(len(row.text))
        p = as_rollback(g.advance(row, t))
        if p is not None:
            blocks.append(p.payload[1].chosen)
            g.declined(row, p)
    assert g.checked and not blocks, blocks
