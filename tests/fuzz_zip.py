"""A tiny zip writer for the hostile-file corpus (tests/fuzz_corpus.py).

Python's zipfile refuses to write the archives the corpus needs (duplicate names, sizes that lie,
members of gigabytes that hold next to nothing on disk), so the bytes are laid out here by hand
(PKWARE APPNOTE 4.3: local headers, central directory, ZIP64 extra fields for big sizes).
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

_CHUNK = 1 << 24
_ZIP64_LIMIT = 0xFFFFFFFF


@dataclass
class Member:
    name: str
    raw: bytes                # the bytes stored (compressed when method == 8)
    crc: int
    size: int                 # the uncompressed size the headers declare
    method: int = 0           # 0 stored, 8 deflated, anything else: unknown
    flags: int = 0            # bit 0: encrypted


def stored(name: str, data: bytes) -> Member:
    return Member(name, data, zlib.crc32(data), len(data))


def deflated(name: str, data: bytes) -> Member:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return Member(name, c.compress(data) + c.flush(), zlib.crc32(data), len(data), method=8)


def deflated_with_zeros(name: str, prefix: bytes, zero_bytes: int) -> Member:
    """`prefix` followed by `zero_bytes` zeros, deflated, without ever holding the zeros.

    After Z_FULL_FLUSH the compressor starts afresh and byte-aligned, so every 16 MiB block of
    zeros compresses to the same bytes: the stream is the prefix, that block repeated, and an
    empty final block. A member of 6 GiB costs a few MB on disk and a second to build."""
    assert zero_bytes % _CHUNK == 0
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)
    zeros = bytes(_CHUNK)
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    assert first == again, "zlib no longer repeats a flushed block of zeros"
    blocks = zero_bytes // _CHUNK
    raw = head + first * blocks + c.flush()
    crc = zlib.crc32(prefix)
    for _ in range(blocks):
        crc = zlib.crc32(zeros, crc)
    return Member(name, raw, crc, len(prefix) + zero_bytes, method=8)


def zip_bytes(members: list[Member]) -> bytes:
    """The archive; ZIP64 fields wherever a size does not fit 32 bits."""
    out, central = bytearray(), bytearray()
    for m in members:
        name = m.name.encode("utf-8")
        offset, csize = len(out), len(m.raw)
        zip64 = m.size >= _ZIP64_LIMIT or csize >= _ZIP64_LIMIT
        version = 45 if zip64 else 20
        size32 = _ZIP64_LIMIT if zip64 else m.size
        csize32 = _ZIP64_LIMIT if zip64 else csize
        local_extra = struct.pack("<HHQQ", 1, 16, m.size, csize) if zip64 else b""
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, version, m.flags, m.method, 0, 0x21,
                           m.crc, csize32, size32, len(name), len(local_extra))
        out += name + local_extra + m.raw
        central_extra = struct.pack("<HHQQ", 1, 16, m.size, csize) if zip64 else b""
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, version, version, m.flags,
                               m.method, 0, 0x21, m.crc, csize32, size32, len(name),
                               len(central_extra), 0, 0, 0, 0, offset)
        central += name + central_extra
    directory_offset = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central),
                       directory_offset, 0)
    return bytes(out)


def read_members(data: bytes) -> list[Member]:
    """The members of a well-formed (small, trusted) archive, for rebuilding it with changes."""
    import io
    import zipfile
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [stored(info.filename, archive.read(info.filename)) for info in archive.infolist()]
