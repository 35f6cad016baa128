"""png.py - read the pixels of a PNG file (8-bit grey, RGB or RGBA, not
interlaced: what headless Chromium's --screenshot writes), so that tests
check what a screenshot shows, not only that it exists."""

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


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(kind, line, prev, bpp):
    out = bytearray(line)
    n = len(out)
    if kind == 0:
        return out
    for i in range(n):
        a = out[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if kind == 1:
            out[i] = (out[i] + a) & 0xff
        elif kind == 2:
            out[i] = (out[i] + b) & 0xff
        elif kind == 3:
            out[i] = (out[i] + ((a + b) >> 1)) & 0xff
        elif kind == 4:
            out[i] = (out[i] + _paeth(a, b, c)) & 0xff
        else:
            raise ValueError("PNG filter type %d" % kind)
    return out


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
        rows.append(bytes(line))
        prev = line
    return Image(width, height, channels, rows)
