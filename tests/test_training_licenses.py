"""License metadata -> canonical name and permissiveness (training/licenses.py)."""
from groundcode.training.licenses import classify


def test_expression_wins_and_or_means_choice():
    assert classify("MIT") == ("MIT", True)
    assert classify("BSD-3-Clause") == ("BSD", True)
    assert classify("MIT OR Apache-2.0") == ("MIT", True)
    assert classify("GPL-3.0-only OR MIT")[1] is True
    assert classify("GPL-3.0-or-later") == ("GPL-family", False)
    assert classify("MIT AND GPL-2.0")[1] is False
    assert classify("MPL-2.0 AND MIT") == ("MPL", False)
    # torch's expression: an exception clause widens Apache-2.0, Boost is permissive
    torch = "Apache-2.0 AND Apache-2.0 WITH LLVM-exception AND BSD-3-Clause AND BSL-1.0 AND MIT"
    assert classify(torch) == ("Apache-2.0+BSD+BSL-1.0+MIT", True)
    assert classify("Apache-2.0 AND CNRI-Python")[1] is True


def test_classifiers_then_free_text():
    assert classify(None, ["License :: OSI Approved :: Apache Software License"]) == ("Apache-2.0", True)
    assert classify(None, ["License :: OSI Approved :: Mozilla Public License 2.0 (MPL 2.0)"]) == ("MPL", False)
    assert classify(None, ["License :: OSI Approved :: GNU Lesser General Public License v3 (LGPLv3)"])[1] is False
    assert classify(None, [], "Modified BSD License") == ("BSD", True)
    assert classify(None, [], "Python Software Foundation License") == ("PSF", True)
    text = "Copyright (c) 2020 X\n\nPermission is hereby granted, free of charge, to any person"
    assert classify(None, [], text) == ("MIT", True)


def test_unknown_is_not_permissive():
    assert classify(None, [], None) == ("unknown", False)
    assert classify(None, [], "UNKNOWN") == ("unknown", False)
    assert classify(None, [], "Proprietary, all rights reserved") == ("unknown", False)
