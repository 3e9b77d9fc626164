"""Screenshots: only the image is stored, without metadata or bytes after its end.

A screenshot is stored as it came, but only what draws it: bytes appended after its end
(where text hides from a viewer), and every part that holds data a viewer does not show
(PNG text, EXIF and private chunks; JPEG comments, EXIF, XMP and other application
segments) are cut off. What they held is still scanned, so the notice says what it was.

Apart from the text rules because it parses PNG chunks and JPEG segments, not text.
"""

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# The chunks that draw the image (critical ones, colour, transparency, animation); any
# other (tEXt, zTXt, iTXt, eXIf, tIME, a program's private chunk) can carry any text.
_PNG_DRAWING_CHUNKS = {
    b"IHDR", b"PLTE", b"IDAT", b"IEND", b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"iCCP", b"sBIT",
    b"pHYs", b"bKGD", b"hIST", b"acTL", b"fcTL", b"fdAT", b"cICP", b"mDCV", b"cLLI",
}  # fmt: skip
# JPEG application segments that change how it is drawn: APP0 (JFIF), APP2 (ICC colour
# profile), APP14 (Adobe colour transform). APP1 (EXIF, XMP), the other APPn and comments
# (0xFE) go.
_JPEG_KEPT_APP = {0xE0, 0xE2, 0xEE}


class NotAnImage(ValueError):
    """The bytes start like a PNG or JPEG but are not one."""


def image_split(data: bytes) -> tuple[bytes, bytes]:
    """(the image without text metadata, the bytes cut off: metadata and any trailer)."""
    if data.startswith(_PNG_SIGNATURE):
        return _png_split(data)
    if data.startswith(b"\xff\xd8"):
        return _jpeg_split(data)
    raise NotAnImage


def _png_split(data: bytes) -> tuple[bytes, bytes]:
    kept = [_PNG_SIGNATURE]
    dropped = []
    pos = len(_PNG_SIGNATURE)
    while True:
        if pos + 12 > len(data):
            raise NotAnImage
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if end > len(data):
            raise NotAnImage
        (kept if kind in _PNG_DRAWING_CHUNKS else dropped).append(data[pos:end])
        pos = end
        if kind == b"IEND":
            dropped.append(data[pos:])
            return b"".join(kept), b"".join(dropped)


def _jpeg_split(data: bytes) -> tuple[bytes, bytes]:
    kept = [b"\xff\xd8"]
    dropped = []
    pos = 2
    size = len(data)
    while True:
        if pos + 2 > size or data[pos] != 0xFF:
            raise NotAnImage
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker == 0xD9:  # end of image
            kept.append(data[pos : pos + 2])
            dropped.append(data[pos + 2 :])
            return b"".join(kept), b"".join(dropped)
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:
            kept.append(data[pos : pos + 2])
            pos += 2
            continue
        if pos + 4 > size:
            raise NotAnImage
        end = pos + 2 + int.from_bytes(data[pos + 2 : pos + 4], "big")
        if end > size:
            raise NotAnImage
        if marker == 0xDA:  # start of scan: entropy-coded data up to the next marker
            scan = data.find(b"\xff", end)
            while (
                scan != -1
                and scan + 1 < size
                and (data[scan + 1] == 0 or 0xD0 <= data[scan + 1] <= 0xD7)
            ):
                scan = data.find(b"\xff", scan + 2)
            if scan == -1 or scan + 1 >= size:
                raise NotAnImage
            kept.append(data[pos:scan])
            pos = scan
            continue
        metadata = marker == 0xFE or (0xE0 <= marker <= 0xEF and marker not in _JPEG_KEPT_APP)
        (dropped if metadata else kept).append(data[pos:end])
        pos = end
