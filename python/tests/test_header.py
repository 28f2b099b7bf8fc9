"""The binding's prototypes and constants are the header's: every function of
include/evsparse.h is declared with the same argument count and kinds, every numeric #define has
the same value (EVS_HEADER overrides the header's path)."""
import ctypes
import os
import re

import pytest

from evsparse import _lib

HEADER = os.environ.get("EVS_HEADER", os.path.join(os.path.dirname(__file__), "..", "..", "include", "evsparse.h"))
pytestmark = pytest.mark.skipif(not os.path.exists(HEADER), reason="include/evsparse.h not found")

# C parameter/result types of the header -> the ctypes type the binding must use.
KINDS = {"evs_status": _lib.I32, "evs_dtype": _lib.I32, "evs_op": _lib.I32, "evs_input_kind": _lib.I32,
         "evs_device_kind": _lib.I32, "int32_t": _lib.I32, "int64_t": _lib.I64, "double": _lib.D}


def header():
    with open(HEADER) as f:
        return f.read()


def prototypes():
    """{name: ([parameter types], result type)} parsed from the header."""
    found = {}
    for result, name, params in re.findall(r"^(\w[\w ]*?\**)\s*(evs_\w+)\(([^)]*)\);", header(), re.M):
        types = [re.sub(r"\s*\b\w+$", "", p.strip()) for p in params.split(",") if p.strip() not in ("", "void")]
        found[name] = (types, result.strip())
    return found


def ctypes_of(c_type):
    if c_type == "const char *":
        return _lib.S
    if "*" in c_type:
        return _lib.P
    return KINDS[c_type.replace("const ", "")]


def test_every_function_has_the_header_prototype():
    header_protos = prototypes()
    assert len(header_protos) >= 50
    assert set(header_protos) == set(_lib.SIGNATURES), "binding and header list different functions"
    for name, (params, result) in header_protos.items():
        args, res = _lib.SIGNATURES[name]
        assert [ctypes_of(p) for p in params] == args, name
        assert ctypes_of(result) is res, name


def test_constants_are_the_header_values():
    defined = dict(re.findall(r"^#define EVS_(\w+) (-?\d+)$", header(), re.M))
    assert {k: int(v) for k, v in defined.items()} == _lib.CONSTANTS


def test_exports_match():
    """Every function the binding declares exists in the loaded library."""
    lib = _lib.get()
    for name in _lib.SIGNATURES:
        assert isinstance(getattr(lib, name), ctypes._CFuncPtr)
