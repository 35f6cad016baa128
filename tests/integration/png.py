"""png.py - read the pixels of a PNG file (8-bit grey, RGB or RGBA, not
interlaced: what headless Chromium's --screenshot writes), so that tests
check what a screenshot shows, not only that it exists."""

import itertools
import operator
import struct
import zlib


class Image:
    def __init__(self, width, height, channels, rows):
        self.width, self.height = width, height
        self.channels = channels
        self.rows = rows            # one bytes object per row, unfiltered

    def pixel(self, x, y):
        """(r, g, b) at integer pixel (x, y)."""
        row, c = self.rows[y], self.channels
        p = row[x * c:(x + 1) * c]
        return (p[0], p[0], p[0]) if c < 3 else (p[0], p[1], p[2])


def _add_bytes(a, b):
    """Bytewise (a + b) mod 256 of two equal-length byte strings, in one
    pass of big-integer arithmetic (no carry crosses a byte)."""
    n = len(a)
    x, y = int.from_bytes(a, "little"), int.from_bytes(b, "little")
    low = int.from_bytes(b"\x7f" * n, "little")
    high = int.from_bytes(b"\x80" * n, "little")
    return (((x & low) + (y & low)) ^ ((x ^ y) & high)).to_bytes(n, "little")


def _unfilter(kind, line, prev, bpp):
    if kind == 0:
        return bytes(line)
    if kind == 2:                       # Up
        return _add_bytes(line, prev)
    if kind == 1:                       # Sub: a running sum per channel
        out = bytearray(len(line))
        for c in range(bpp):
            sums = itertools.accumulate(line[c::bpp])
            out[c::bpp] = bytes(map(operator.and_, sums, itertools.repeat(0xff)))
        return bytes(out)
    if kind not in (3, 4):
        raise ValueError("PNG filter type %d" % kind)
    out = bytearray(line)
    n = len(out)
    for i in range(min(bpp, n)):        # no left neighbour: a = c = 0
        out[i] = (out[i] + (prev[i] >> 1 if kind == 3 else prev[i])) & 0xff
    if kind == 3:                       # Average
        for i in range(bpp, n):
            out[i] = (out[i] + ((out[i - bpp] + prev[i]) >> 1)) & 0xff
        return bytes(out)
    for i in range(bpp, n):             # Paeth, written out: the hot loop
        a, b, c = out[i - bpp], prev[i], prev[i - bpp]
        pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
        out[i] = (out[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xff
    return bytes(out)


def read(path):
    """The decoded image; ValueError when it is not a PNG this reads."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, hdr = 8, [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if hdr is None:
        raise ValueError("no IHDR chunk")
    width, height, depth, colour, _, _, interlace = hdr
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace:
        raise ValueError("PNG depth %d, colour type %d, interlace %d" % (depth, colour, interlace))
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, prev = [], bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        line = _unfilter(raw[start], raw[start + 1:start + 1 + stride], prev, channels)
        rows.append(line)
        prev = line
    return Image(width, height, channels, rows)
