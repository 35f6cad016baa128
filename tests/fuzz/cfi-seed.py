#!/usr/bin/env python3
"""cfi-seed.py - seeds for tests/fuzz/fuzz-cfi.c from a real ELF binary.

    python3 tests/fuzz/cfi-seed.py BINARY OUT-PREFIX [NM-SYMBOL...]

Lays the binary's PT_LOAD segments out at their virtual addresses (from
the lowest), as lib/stackcopy.c maps another process's module, and writes
one seed per symbol (default: main): the offset of PT_GNU_EH_FRAME, the
offset of a return address 5 bytes into the symbol, exact = 0, then the
image.  Standard library only."""

import struct
import subprocess
import sys

PT_LOAD, PT_GNU_EH_FRAME = 1, 0x6474e550


def image(path):
    with open(path, "rb") as f:
        elf = f.read()
    phoff, = struct.unpack_from("<Q", elf, 32)
    phentsize, phnum = struct.unpack_from("<HH", elf, 54)
    loads, hdr = [], None
    for i in range(phnum):
        p_type, _, off, vaddr, _, filesz, memsz, _ = struct.unpack_from(
            "<IIQQQQQQ", elf, phoff + i * phentsize)
        if p_type == PT_LOAD:
            loads.append((off, vaddr, filesz, memsz))
        elif p_type == PT_GNU_EH_FRAME:
            hdr = vaddr
    vmin = min(v for _, v, _, _ in loads)
    img = bytearray(max(v + m for _, v, _, m in loads) - vmin)
    for off, vaddr, filesz, _ in loads:
        img[vaddr - vmin:vaddr - vmin + filesz] = elf[off:off + filesz]
    return bytes(img), hdr - vmin, vmin


def symbol(path, name):
    out = subprocess.run(["nm", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] == name:
            return int(f[0], 16)
    sys.exit("cfi-seed: no symbol %s in %s" % (name, path))


def main():
    path, prefix = sys.argv[1], sys.argv[2]
    img, hdr, vmin = image(path)
    for name in sys.argv[3:] or ["main"]:
        pc = symbol(path, name) - vmin + 5
        with open("%s-%s" % (prefix, name), "wb") as f:
            f.write(struct.pack("<IIB", hdr, pc, 0) + img)


main()
