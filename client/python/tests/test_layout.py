"""The ctypes structs, constants and functions match the C headers.

A small C program is generated from sluice._lib.STRUCTS and CONSTANTS,
compiled against client/sluice.h and run; it prints each struct's size and
each field's offset and size, and each constant's value, as C sees them. The headers are also read for every
struct and function they declare, so that one the binding has not caught up
with fails here (a function is bound, or named in UNBOUND with the reason).
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess

import pytest

from conftest import ROOT
from sluice import _lib

HEADERS = [ROOT / "client/sluice.h", ROOT / "client/sluice_pace.h", ROOT / "client/sluice_admin.h"]


def header_text() -> str:
    text = "\n".join(h.read_text() for h in HEADERS)
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)  # comments name functions too


def compile_and_run(tmp_path, body: list) -> list:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to read the headers with")
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "sluice.h"', "int main(void) {", *body,
             "    return 0;", "}"]
    src, exe = tmp_path / "layout.c", tmp_path / "layout"
    src.write_text("\n".join(lines) + "\n")
    subprocess.run([cc, "-std=c11", "-I", str(ROOT / "client"), "-I", str(ROOT / "proto"), str(src), "-o", str(exe)],
                   check=True, capture_output=True, timeout=60)
    return subprocess.run([str(exe)], check=True, capture_output=True, timeout=10).stdout.decode().split("\n")[:-1]


def test_every_struct_has_the_layout_of_its_c_declaration(tmp_path):
    body, expect = [], []
    for cname, cls in _lib.STRUCTS.items():
        body.append(f'    printf("{cname} %zu\\n", sizeof({cname}));')
        expect.append(f"{cname} {ctypes.sizeof(cls)}")
        for field, _ in cls._fields_:  # where each field is, and how big (a uint32_t is not a uint64_t)
            body.append(f'    printf("{cname}.{field} %zu %zu\\n", offsetof({cname}, {field}), '
                        f'sizeof ((({cname} *)0)->{field}));')
            expect.append(f"{cname}.{field} {getattr(cls, field).offset} {getattr(cls, field).size}")
    assert compile_and_run(tmp_path, body) == expect


def test_every_constant_has_the_value_of_its_c_definition(tmp_path):
    body, expect = [], []
    for name, value in _lib.CONSTANTS.items():
        body.append(f'    if (({name}) < 0) printf("{name} %lld\\n", (long long)({name}));')
        body.append(f'    else printf("{name} %llu\\n", (unsigned long long)({name}));')
        expect.append(f"{name} {value}")
    assert compile_and_run(tmp_path, body) == expect


def test_every_struct_the_headers_declare_is_here():
    declared = set(re.findall(r"typedef struct (sl_\w+) \{", header_text()))
    assert {"sl_stats_more", "sl_waiting", "sl_backup_info"} <= declared  # the pattern still reads them
    assert sorted(declared - set(_lib.STRUCTS)) == []
    assert sorted(set(_lib.STRUCTS) - declared) == []


def test_every_function_the_headers_declare_is_bound_or_said_unbound():
    declared = set(re.findall(r"\b(sl_\w+)\s*\(", header_text()))
    assert {"sl_stats_get_more", "sl_level_list_ex", "sl_msg_peek", "sl_settings_export"} <= declared
    assert sorted(declared - set(_lib._FUNCS) - set(_lib.UNBOUND)) == []
    assert sorted(set(_lib._FUNCS) & set(_lib.UNBOUND)) == []
    assert sorted((set(_lib._FUNCS) | set(_lib.UNBOUND)) - declared) == []


def test_every_function_the_binding_declares_is_exported():
    so = _lib.lib()
    for name in _lib._FUNCS:
        assert hasattr(so, name), name


def test_stats_more_carries_its_size():
    assert _lib.StatsMore.new().size == ctypes.sizeof(_lib.StatsMore)
