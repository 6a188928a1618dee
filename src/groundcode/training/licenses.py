"""License classification for corpus provenance: metadata strings -> (canonical name, permissive?).

Reads what a distribution declares (License-Expression, License classifiers, the free-text License
field) and maps it onto a short canonical name. Only permissive licenses may enter the corpus;
anything unknown is excluded (and counted by the corpus builder), never guessed into the corpus.
Not here: reading the metadata (training/corpus.py). Test: tests/test_training_licenses.py.
"""
from __future__ import annotations

import re

# Canonical names that may enter the corpus. MPL/LGPL/GPL/AGPL/EPL (copyleft, weak or strong) may not.
PERMISSIVE = frozenset({"MIT", "BSD", "Apache-2.0", "PSF", "ISC", "Unlicense", "Zlib", "HPND",
                        "0BSD", "CC0", "Public-Domain", "MIT-CMU", "BSL-1.0", "CNRI-Python"})

# Ordered: the first pattern that matches names the license. Copyleft first, so "LGPL" never
# matches the "MIT"-style loose patterns further down.
_PATTERNS = [
    (r"\bA?L?GPL|GNU (LESSER |LIBRARY |AFFERO )?GENERAL PUBLIC", "GPL-family"),
    (r"\bMPL\b|MOZILLA PUBLIC", "MPL"),
    (r"\bEPL\b|ECLIPSE PUBLIC", "EPL"),
    (r"\bAPACHE", "Apache-2.0"),
    (r"\b0BSD\b", "0BSD"),
    (r"\bBSD\b|BSD-[234]-CLAUSE|BSD LICENSE", "BSD"),
    (r"\bMIT-CMU\b", "MIT-CMU"),
    (r"\bMIT\b|EXPAT", "MIT"),
    (r"\bPSF|PYTHON SOFTWARE FOUNDATION|\bPYTHON-2", "PSF"),
    (r"\bCNRI-PYTHON\b", "CNRI-Python"),
    (r"\bBSL-1\.0\b|BOOST SOFTWARE LICENSE", "BSL-1.0"),
    (r"\bISC\b|\bISCL\b", "ISC"),
    (r"\bUNLICENSE\b", "Unlicense"),
    (r"\bZLIB\b", "Zlib"),
    (r"\bHPND\b|HISTORICAL PERMISSION", "HPND"),
    (r"\bCC0\b", "CC0"),
    (r"PUBLIC DOMAIN", "Public-Domain"),
    (r"PERMISSION IS HEREBY GRANTED, FREE OF CHARGE", "MIT"),  # the MIT text pasted into License
    (r"REDISTRIBUTION AND USE IN SOURCE AND BINARY FORMS", "BSD"),
]


def _name_one(text: str) -> str | None:
    up = text.upper()
    for pattern, name in _PATTERNS:
        if re.search(pattern, up):
            return name
    return None


def classify_expression(expr: str) -> tuple[str, bool]:
    """An SPDX-like expression: `A OR B` is permissive if one side is; `A AND B` if both are."""
    alternatives = re.split(r"\s+OR\s+", expr.strip().strip("()"), flags=re.IGNORECASE)
    best = None
    for alt in alternatives:
        # `X WITH exception` only adds permissions to X: judge X.
        parts = [re.split(r"\s+WITH\s+", p, flags=re.IGNORECASE)[0].strip("() ")
                 for p in re.split(r"\s+AND\s+", alt, flags=re.IGNORECASE)]
        names = [_name_one(p) for p in parts if p]
        if names and all(n in PERMISSIVE for n in names):
            return "+".join(dict.fromkeys(names)), True
        best = best or next((n for n in names if n), None)
    return best or "unknown", False


def classify(expression: str | None = None, classifiers: list[str] | tuple = (),
             license_field: str | None = None) -> tuple[str, bool]:
    """Canonical license name and whether it is permissive; 'unknown' when nothing is declared."""
    if expression and expression.strip():
        return classify_expression(expression)
    from_classifiers = [_name_one(c.split("::")[-1]) for c in classifiers if c.startswith("License ::")]
    from_classifiers = [n for n in from_classifiers if n]
    if from_classifiers:
        # Several license classifiers on one package mean a choice (dual licensing).
        good = [n for n in from_classifiers if n in PERMISSIVE]
        return (good[0], True) if good else (from_classifiers[0], False)
    text = (license_field or "").strip()
    if not text or text.upper() in ("UNKNOWN", "NONE", "OTHER", "OTHER/PROPRIETARY LICENSE"):
        return "unknown", False
    first = text.splitlines()[0]
    if len(first) < 80 and re.search(r"\s(OR|AND)\s", first):
        return classify_expression(first)
    name = _name_one(first) or _name_one(text[:2000])
    return (name, name in PERMISSIVE) if name else ("unknown", False)
