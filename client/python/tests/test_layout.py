"""The ctypes structs match the C headers: every size and every field's offset.

A small C program is generated from sluice._lib.STRUCTS, compiled against
client/sluice.h and run; it prints sizeof and offsetof as C sees them.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

from conftest import ROOT
from sluice import _lib


def test_every_struct_has_the_layout_of_its_c_declaration(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to read the headers with")
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "sluice.h"', "int main(void) {"]
    expect = []
    for cname, cls in _lib.STRUCTS.items():
        lines.append(f'    printf("{cname} %zu\\n", sizeof({cname}));')
        expect.append(f"{cname} {ctypes.sizeof(cls)}")
        for field, _ in cls._fields_:
            lines.append(f'    printf("{cname}.{field} %zu\\n", offsetof({cname}, {field}));')
            expect.append(f"{cname}.{field} {getattr(cls, field).offset}")
    lines += ["    return 0;", "}"]
    src, exe = tmp_path / "layout.c", tmp_path / "layout"
    src.write_text("\n".join(lines) + "\n")
    subprocess.run([cc, "-std=c11", "-I", str(ROOT / "client"), "-I", str(ROOT / "proto"), str(src), "-o", str(exe)],
                   check=True, capture_output=True, timeout=60)
    got = subprocess.run([str(exe)], check=True, capture_output=True, timeout=10).stdout.decode().split("\n")[:-1]
    assert got == expect


def test_every_function_the_binding_declares_is_exported():
    so = _lib.lib()
    for name in _lib._FUNCS:
        assert hasattr(so, name), name
