"""A snippet: one bimodal retrieval record (a natural-language description and the code it goes
with), with where it came from and under which license. JSONL between stages.

Not here: where snippets come from (snippet_sources.py), how they are searched (snippet_index.py,
snippet_retriever.py). Test: tests/test_snippets.py.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass


@dataclass
class Snippet:
    description: str               # prose that introduces the code (may be empty)
    code: str                      # the example's source, doctest prompts and outputs removed
    source: str                    # "numpy==1.26.4:numpy/lib/function_base.py:percentile", "file.jsonl:12"
    license: str = ""              # the license of the text (its package's, or the JSONL's field)
    name: str = ""                 # what the example is about: "numpy.percentile" (may be empty)
    id: str = ""                   # content hash (of normalised code + description), set on creation

    def __post_init__(self):
        if not self.id:
            self.id = hashlib.sha1((normalise_code(self.code) + "\0" + " ".join(self.description.split()))
                                   .encode("utf-8")).hexdigest()[:16]

    def title(self) -> str:
        """The description, or the name when there is no prose."""
        return self.description or self.name

    def search_text(self) -> str:
        """What description-side retrievers index: the name (its words) and the prose."""
        return f"{self.name}: {self.description}" if self.name else self.description

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Snippet":
        return cls(**{k: d[k] for k in ("description", "code", "source", "license", "name", "id") if k in d})


def normalise_code(code: str) -> str:
    """Code compared for duplicates: comments dropped, whitespace collapsed."""
    lines = []
    for ln in code.splitlines():
        ln = re.sub(r"\s+#.*$", "", ln) if "#" in ln else ln
        if ln.strip() and not ln.lstrip().startswith("#"):
            lines.append(" ".join(ln.split()))
    return "\n".join(lines)
