"""Screenshots: only the image is stored, without text metadata or bytes after its end.

A screenshot is stored as it came, but only the image itself: bytes appended after its
end (where text hides from a viewer) and PNG text chunks / JPEG comments are cut off.
Their text is still scanned, so the notice says what they held.

Apart from the text rules because it parses PNG chunks and JPEG segments, not text.
"""

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_TEXT_CHUNKS = {b"tEXt", b"zTXt", b"iTXt"}


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
        (dropped if kind in _PNG_TEXT_CHUNKS else kept).append(data[pos:end])
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
        (dropped if marker == 0xFE else kept).append(data[pos:end])
        pos = end
