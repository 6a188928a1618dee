"""Runs INSIDE the sandbox, as the first part of a test program (its source is prepended by
execution.judged_program): the test harness judges, the code under test runs in a child it
cannot reach.

    _gc_untrusted_exec(code, env)      # instead of exec(code, env): the code runs in a fork

The harness process makes itself non-dumpable (no /proc/<pid>/fd, /mem or ptrace for a
process of the same uid), so the verdict's pass nonce — read from an inherited pipe by
execution.NONCE_EPILOGUE after the tests — is out of the child's reach: the child closes every
descriptor but its result pipe before the code runs, and the harness reads the nonce only after
the last child. The child sends back the namespace the code left (each value pickled on its own,
torch/tensorflow tensors as numpy arrays, the current matplotlib figure) and how it ended; the
harness unpickles with an allow-list (classes of the data libraries and their reconstructors,
never a function that runs code), so the code under test cannot act in the harness: an early
`os._exit(0)`, a read of the nonce's descriptor, patched assertion helpers or a killed parent
all end without the nonce. An exception in the code is raised again in the harness with its name
and message; `sys.exit(n)` exits the harness with n (no nonce: not a pass).

This file is never imported by groundcode; it is text. Test: tests/test_sandbox.py (forgeries),
tests/test_ds1000.py (DS-1000's harness through it).
"""
import builtins as _gc_builtins


def _gc_private():
    """No other process of this uid may read this one's descriptors or memory."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)      # PR_SET_DUMPABLE, 0
    except Exception:        # noqa: BLE001 (no prctl: the sandbox's other walls still hold)
        pass


_gc_private()

_GC_ROOTS = {"numpy", "pandas", "scipy", "sklearn", "matplotlib", "mpl_toolkits", "PIL", "collections", "datetime",
             "decimal", "fractions", "builtins", "copyreg", "_codecs", "pytz", "dateutil",
             "zoneinfo", "uuid", "enum", "functools", "torch", "tensorflow", "keras", "__main__"}
_GC_DENY = ("pandas.io", "pandas.core.computation", "pandas.eval", "numpy.ctypeslib",
            "numpy.lib.npyio", "numpy.f2py", "numpy.distutils", "numpy.testing",
            "scipy._lib._ccallback", "scipy.weave", "torch.jit", "torch.package", "torch.hub",
            "torch.serialization", "torch.storage", "torch._dynamo", "torch.fx", "torch.ops",
            "torch._ops", "torch.utils", "tensorflow.python.eager", "tensorflow.python.platform",
            "tensorflow.io", "matplotlib.animation", "matplotlib.backends", "matplotlib.pyplot")
_GC_BUILTIN_TYPES = {"int", "float", "complex", "str", "bytes", "bytearray", "list", "tuple", "dict",
                     "set", "frozenset", "bool", "slice", "range", "object", "NoneType"}
# functions a pickled matplotlib figure names (callbacks, formatters); none writes or runs code
_GC_FUNCS = {"matplotlib.axis.Axis._format_with_dict", "matplotlib.backend_bases._key_handler",
             "matplotlib.backend_bases._mouse_handler", "matplotlib.cbook._exception_printer",
             "matplotlib.colorbar._remove_cbar_axes", "numpy.average", "numpy.min", "numpy.max",
             "numpy.amin", "numpy.amax"}    # the last five: a 3D collection's z-sort
# bound methods a figure's pickle takes with getattr (its callbacks and transforms); nothing else
_GC_METHODS = {"delaxes", "pick", "_remove_legend", "_unit_change_handler", "_cbar_cla", "_get_view",
               "_set_view", "_set_view_from_bbox", "drag_pan", "_findoffset", "_set_nothing",
               "_set_tickdown", "_set_tickleft", "_set_tickright", "_set_tickup", "get_affine",
               "get_matrix", "inverted", "transform", "transform_affine", "transform_non_affine",
               "transform_path", "transform_path_affine", "transform_path_non_affine",
               "_button_press", "_button_release", "_on_move"}


def _gc_getattr(obj, name):
    """getattr for a figure's pickle: a listed method of a matplotlib object (or list.remove)."""
    kind = type(obj).__module__ or ""
    if (kind.startswith(("matplotlib.", "mpl_toolkits.")) and name in _GC_METHODS) or (
            type(obj) is list and name == "remove"):
        return getattr(obj, name)
    raise AttributeError(f"{kind}.{type(obj).__name__}.{name} is not allowed back from the code under test")


_GC_RECONSTRUCTORS = ("_reconstruct", "_mareconstruct", "_reconstructor", "scalar", "_frombuffer", "_unpickle",
                      "_new_", "new_block", "encode", "_rebuild", "_gc_tensor", "_timedelta_unpickle")


def _gc_loads(data):
    """Unpickle what the child sent: classes of the data libraries and their reconstructors only."""
    import io
    import pickle
    import sys

    class Restricted(pickle.Unpickler):
        def find_class(self, module, name):
            root = module.split(".")[0]
            where = f"{module}.{name}"
            if (module, name) == ("builtins", "getattr"):
                return _gc_getattr
            if where in _GC_FUNCS:
                return super().find_class(module, name)
            if root not in _GC_ROOTS or "__" in name or where.startswith(_GC_DENY):
                raise pickle.UnpicklingError(f"{where} is not allowed back from the code under test")
            if module == "__main__" and not name.startswith("_gc_tensor"):
                raise pickle.UnpicklingError(f"{where} is not allowed back from the code under test")
            obj = super().find_class(module, name)
            if root == "builtins" and name not in _GC_BUILTIN_TYPES:
                raise pickle.UnpicklingError(f"{where} is not allowed back from the code under test")
            if isinstance(obj, type):
                if issubclass(obj, type):
                    raise pickle.UnpicklingError(f"{where}: a metaclass is not allowed back")
                return obj
            if "." not in name and name.startswith(_GC_RECONSTRUCTORS):
                return obj
            np = sys.modules.get("numpy")
            if np is not None and isinstance(obj, np.ufunc):           # np.log: arithmetic only
                return obj
            raise pickle.UnpicklingError(f"{where} (a function) is not allowed back from the code under test")
    return Restricted(io.BytesIO(data)).load()


def _gc_tensor(array, kind, requires_grad=False):
    """A torch or tensorflow tensor the child sent as a numpy array."""
    if kind == "torch":
        import torch
        t = torch.from_numpy(array)
        return t.requires_grad_(True) if requires_grad else t
    import tensorflow as tf
    return tf.convert_to_tensor(array)


def _gc_dumps(obj):
    """Pickle in the child; tensors go as numpy arrays (their own pickles load through torch.load)."""
    import io
    import pickle
    import sys

    class Pickler(pickle.Pickler):
        def reducer_override(self, o):
            torch = sys.modules.get("torch")
            if torch is not None and isinstance(o, torch.Tensor):
                return _gc_tensor, (o.detach().cpu().numpy(), "torch", bool(o.requires_grad))
            tf = sys.modules.get("tensorflow")
            if tf is not None and isinstance(o, getattr(tf, "Tensor", ())) and hasattr(o, "numpy"):
                return _gc_tensor, (o.numpy(), "tensorflow")
            return NotImplemented
    buf = io.BytesIO()
    Pickler(buf, protocol=4).dump(obj)
    return buf.getvalue()


def _gc_child(code, env, w):
    """In the fork: close every descriptor but the result pipe, run the code, send its namespace."""
    import os
    import sys
    import traceback
    import types
    top = os.sysconf("SC_OPEN_MAX")
    top = 65536 if top < 0 else min(top, 1 << 20)
    os.closerange(3, w)
    os.closerange(w + 1, top)
    try:
        _gc_builtins.exec(code, env)
        ended = ("ok",)
    except SystemExit as e:
        code_ = e.code
        if code_ is not None and not isinstance(code_, int):
            print(code_, file=sys.stderr)
            code_ = 1
        ended = ("exit", code_ or 0)
    except BaseException as e:           # noqa: BLE001 (reported to the harness)
        traceback.print_exc()
        ended = ("raise", type(e).__name__, str(e)[:4000])
    values = {}
    for k, v in list((env or {}).items()):
        if k.startswith("__") or isinstance(v, (types.ModuleType, types.FunctionType, type)):
            continue
        try:
            values[k] = _gc_dumps(v)
        except Exception:              # noqa: BLE001 (not transferable: left out)
            pass
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None and plt.get_fignums():
        try:
            values["__gc_figure__"] = _gc_dumps(plt.gcf())
        except Exception:              # noqa: BLE001
            pass
    sys.stdout.flush()
    sys.stderr.flush()
    data = _gc_dumps((ended, values))
    with os.fdopen(w, "wb") as f:
        f.write(data)


def _gc_untrusted_exec(code, env=None, *more):
    """exec(code, env) in a forked child; env gets back what the code left in it."""
    import os
    import sys
    if env is None or more:
        raise TypeError("_gc_untrusted_exec(code, env): one namespace dict")
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            _gc_child(code, env, w)
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if not data:                         # the code ended its process: as it would have ended ours
        code_ = os.waitstatus_to_exitcode(status)
        sys.stdout.flush()
        os._exit(code_ if 0 <= code_ < 256 else 128 - code_)
    try:
        ended, values = _gc_loads(data)
        got = {}
        for k, v in values.items():
            try:
                got[k] = _gc_loads(v)
            except Exception as exc:     # noqa: BLE001 (not allowed back: as if never set)
                print(f"groundcode judge: {k!r} not taken back ({exc})", file=sys.stderr)
    except Exception as exc:             # noqa: BLE001
        raise RuntimeError(f"the code under test sent back something unreadable: {exc}") from None
    got.pop("__gc_figure__", None)       # unpickled, a pyplot figure is the current one again
    env.update(got)
    if ended[0] == "exit":
        sys.stdout.flush()
        raise SystemExit(ended[1])
    if ended[0] == "raise":
        raise type(ended[1], (Exception,), {"__module__": "builtins"})(ended[2])
