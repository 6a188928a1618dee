"""Closed `__getattr__`s and `__setstate__` restoring are no reason to fail open: the rule on
`ast` snippets (analysis/dynamic_attrs.py) and the Jedi worker's answers at a cursor on a
fixture package (a module's lazy `__getattr__`, a class's, pickling's `__setstate__`)."""
from __future__ import annotations

import ast
import textwrap

import pytest

from groundcode.analysis.dynamic_attrs import class_dynamics, closed_getattr, getattr_names
from groundcode.analysis.jedi_worker import Job, complete_members


def _closed(src: str):
    fn = ast.parse(textwrap.dedent(src)).body[0]
    return closed_getattr(fn)


@pytest.mark.parametrize("src, names", [
    # an elif chain of equality tests (numpy's shape), a nested test inside a guarded body
    ('''def __getattr__(attr):
           import warnings
           if attr == "linalg":
               import numpy.linalg as linalg
               return linalg
           elif "fft" == attr:
               return 2
           elif attr == "distutils":
               if have_distutils:
                   return 3
               else:
                   raise AttributeError("gone")
           elif attr == "array_api":
               raise AttributeError("gone")
           if attr in former:
               raise AttributeError(former[attr])
           raise AttributeError(attr)''', {"linalg", "fft", "distutils"}),
    # `in` a literal tuple / frozenset, `or` of tests, a method's `(self, name)`
    ('''def __getattr__(self, name):
           if name in ("a", "b"):
               return 1
           if name in frozenset({"c"}) or name == "d":
               return 2
           if name == "e" and self.ready:
               return 3
           raise AttributeError(name)''', {"a", "b", "c", "d", "e"}),
    # a return inside a nested function is that function's, not __getattr__'s
    ('''def __getattr__(name):
           if name == "f":
               def f():
                   return 1
               return f
           raise AttributeError(name)''', {"f"}),
])
def test_a_getattr_that_returns_only_for_literal_names_and_raises_last_is_closed(src, names):
    assert _closed(src) == names


@pytest.mark.parametrize("src", [
    # no final raise
    '''def __getattr__(name):
           if name == "a":
               return 1''',
    # a bare return outside any guard
    '''def __getattr__(name):
           if name == "a":
               return 1
           return globals()[name]
           raise AttributeError(name)''',
    # a return in the else of a guard (any other name)
    '''def __getattr__(name):
           if name == "a":
               raise AttributeError(name)
           else:
               return 1
           raise AttributeError(name)''',
    # a test that is not against literals
    '''def __getattr__(name):
           if name in _lazy:
               return _lazy[name]
           raise AttributeError(name)''',
    # the parameter rebound before the test
    '''def __getattr__(name):
           name = name.lower()
           if name == "a":
               return 1
           raise AttributeError(name)''',
    # a generator answers any name
    '''def __getattr__(name):
           yield name
           raise AttributeError(name)''',
    # the delegation idiom
    '''def __getattr__(self, name):
           return getattr(self._wrapped, name)''',
])
def test_anything_else_is_open(src):
    assert _closed(src) is None


def test_getattr_names_reads_the_function_at_a_line_of_a_partial_file():
    text = ("import os\nif os.name:\n    pass\nelse:\n    def __getattr__(attr):\n"
            "        if attr == 'lazy':\n            return 1\n# a comment at column 0\n"
            "        raise AttributeError(attr)\n\n    x = (\n")            # the rest does not parse
    assert getattr_names(text, 5) == {"lazy"}
    assert getattr_names(text, 1) is None                                     # not a __getattr__ there
    cut = "def __getattr__(name):\n    if name == 'a':\n        return (1,\n2)\n    raise AttributeError\n"
    assert getattr_names(cut, 1) is None           # cut inside brackets: unreadable, open as before
    assert getattr_names(cut.replace("\n2)", "\n  2)"), 1) == {"a"}
    broken = "def __getattr__(name):\n    return '''\nx\n'''\n"
    assert getattr_names(broken, 1) is None        # a return for any name, across a string


@pytest.mark.parametrize("method, dynamic", [("__setstate__", False), ("update", True)])
def test_restoring_in_setstate_is_not_dynamic_elsewhere_it_is(method, dynamic):
    for body in ("for key in state:\n            setattr(self, key, state[key])",
                 "for k, v in state.items():\n            self.__dict__[k] = v",
                 "self.__dict__.update(state)", "vars(self).update(state)"):
        src = f"class C:\n    def {method}(self, state):\n        {body}\n"
        assert class_dynamics(src) == (frozenset(), dynamic), body


def test_class_text_with_a_closed_getattr_adds_its_names():
    src = ("class C:\n    def __getattr__(self, name):\n        if name == 'later':\n"
           "            return 1\n        raise AttributeError(name)\n")
    assert class_dynamics(src) == ({"later"}, False)
    assert class_dynamics(src.replace("raise AttributeError(name)", "return 2"))[1] is True
    assert class_dynamics("class C:\n    def __getattribute__(self, name):\n        return 1\n")[1] is True
    # a class being written: its partial line is read as text, the rest (after it too) as code
    head = "class C:\n    def f(self):\n"
    tail = "\n    def __setstate__(self, s):\n        self.__dict__.update(s)\n"
    assert class_dynamics(head + "        self." + tail) == (frozenset(), False)
    assert class_dynamics(head + "        setattr(self, k, (" + tail)[1] is True
    assert class_dynamics(head + "        setattr(self, 'k', (" + tail) == ({"k"}, False)
    assert class_dynamics(head + "        self." + tail.replace("__setstate__", "load"))[1] is True


PACKAGE = {
    "lazy/__init__.py": '''from .core import array


def __getattr__(name):
    if name == "heavy":
        import lazy.heavy as heavy
        return heavy
    elif name in ("alias_a", "alias_b"):
        return array
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
''',
    "lazy/core.py": "def array(x):\n    return x\n",
    "lazy/heavy.py": "def crunch():\n    return 1\n",
    "loose.py": '''def __getattr__(name):
    return globals()[name.lower()]
''',
    "state.py": '''class Restored:
    __slots__ = ("alpha", "beta")

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state):
        for key in state:
            setattr(self, key, state[key])

    def size(self):
        return 1


class Updating:
    def update(self, **kw):
        for key in kw:
            setattr(self, key, kw[key])

    def size(self):
        return 1


class LazyAttrs:
    def __getattr__(self, name):
        if name == "cached":
            self.cached = 1
            return 1
        raise AttributeError(name)
''',
}


@pytest.fixture
def package(tmp_path):
    for rel, text in PACKAGE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def _ask(root, code):
    lines = code.splitlines()
    names, _, note = complete_members(Job(str(root), code, str(root / "m.py"), len(lines), len(lines[-1])))
    return names, note


def test_a_module_with_a_closed_lazy_getattr_is_answered_with_the_lazy_names(package):
    names, note = _ask(package, "import lazy\nlazy.")
    assert note is None
    assert {"array", "heavy", "alias_a", "alias_b"} <= names and "crunch" not in names


def test_a_module_with_an_open_getattr_still_fails_open(package):
    names, note = _ask(package, "import loose\nloose.")
    assert note == "dynamic: loose.__getattr__"


@pytest.mark.parametrize("cls, note", [
    ("Restored", None), ("Updating", "dynamic: Updating sets attributes at run time"), ("LazyAttrs", None)])
def test_setstate_restoring_and_a_closed_class_getattr_are_answered(package, cls, note):
    names, got = _ask(package, f"from state import {cls}\ndef f(x: {cls}):\n    x.")
    assert got == note
    if note is None:
        assert "__class__" in names
        assert ("size" in names) if cls == "Restored" else ("cached" in names)


def test_a_closed_getattr_in_the_file_being_written_is_read_from_its_text(tmp_path):
    code = ("class Lazy:\n    def __getattr__(self, name):\n        if name == 'later':\n"
            "            return 1\n        raise AttributeError(name)\n    def own(self):\n        self.")
    names, note = _ask(tmp_path, code)
    assert note is None and {"later", "own"} <= names
    open_code = code.replace("raise AttributeError(name)", "return 2")
    names, note = _ask(tmp_path, open_code)
    assert note == "dynamic: m.Lazy.__getattr__"


def test_numpy_and_urllib_parse_are_answered(tmp_path):
    # numpy (a dependency) and urllib.parse have closed module __getattr__s (lazy submodules,
    # a deprecation shim): their members are an answer, the lazy names included
    import numpy
    names, note = _ask(tmp_path, "import numpy as np\nnp.")
    if int(numpy.__version__.split(".")[0]) >= 2:
        assert note is None and {"linalg", "array", "fft"} <= names
    else:   # numpy 1.x's __getattr__ returns a stand-in for any expired alias: open, rightly
        assert note == "dynamic: numpy.__getattr__"
    names, note = _ask(tmp_path, "import urllib.parse\nurllib.parse.")
    assert note is None and {"quote", "Quoter"} <= names


def test_self_class_is_no_answer_jedi_infers_a_typing_placeholder(tmp_path):
    # Jedi infers `self.__class__` as typing.Self (an instance of typing_extensions'
    # _SpecialForm): once _SpecialForm's closed __getattr__ stopped failing open, its members
    # blocked `self.__class__._hooks` (pyrser, a class attribute). Not typed: fail open.
    code = "class A:\n    _hooks = {}\n    def f(self):\n        self.__class__."
    names, note = _ask(tmp_path, code)
    assert note == "untyped: typing.Self"
    names, note = _ask(tmp_path, code.replace("self.__class__.", "type(self)."))
    assert note is None and "_hooks" in names


SNAPSHOT = ("class Consumer:\n    def __init__(self):\n        self._own = set(self.__dict__)\n"
            "    def _serialize(self):\n"
            "        return dict((k, v) for k, v in self.__dict__.items() if k not in self._own)\n")


@pytest.mark.parametrize("restore, dynamic", [
    # a restore in bulk from a parameter, mirroring the snapshot: not dynamic
    ("    def _deserialize(self, data):\n        for k, v in data.items():\n            self.__dict__[k] = v\n", False),
    ("    def load(self, state):\n        self.__dict__.update(state)\n", False),
    # one name from a parameter, setattr, **kwargs, __init__: still dynamic
    ("    def set(self, name, v):\n        self.__dict__[name] = v\n", True),
    ("    def load(self, data):\n        for k, v in data.items():\n            setattr(self, k, v)\n", True),
    ("    def load(self, **kw):\n        for k, v in kw.items():\n            self.__dict__[k] = v\n", True),
    ("    def __init__(self, data):\n        for k, v in data.items():\n            self.__dict__[k] = v\n", True),
])
def test_a_restore_that_mirrors_a_snapshot_is_not_dynamic(restore, dynamic):
    assert class_dynamics(SNAPSHOT + restore)[1] is dynamic
    # without the snapshot method every one of them makes up names
    alone = "class Consumer:\n" + restore
    assert class_dynamics(alone)[1] is True
