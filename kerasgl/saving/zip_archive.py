"""A .keras zip archive, read member by member within bounds.

zipfile trusts the sizes an archive declares; a member can store a few MB that inflate to
gigabytes. Before a member is read its declared size is checked against the limit for what it
is (limits.py: a config, the metadata, the weights) and, when it is compressed, against
MAX_EXPANSION times its stored size; it is then read by a stream that stops at the declared
size (zipfile checks the CRC at the end). An archive that holds a name twice is refused: which
copy is "the" model would be up to the reader (zipfile takes the last, other tools the first).
Nothing is ever extracted, so member names (`../x`, `/abs`) are never used as paths.
"""
from __future__ import annotations

import os
import zipfile
import zlib
from collections import Counter

from ..errors import ModelFileError
from .limits import expansion_allowed, readable_size

_READ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError,
                ValueError, RuntimeError, NotImplementedError, OverflowError)
_CHUNK = 1 << 20


class KerasZip:
    def __init__(self, path: str):
        self.path = path
        try:
            self._archive = zipfile.ZipFile(path)
            self._infos = self._archive.infolist()
        except _READ_ERRORS as exc:
            raise ModelFileError(f"{path}: not a readable .keras (zip) archive: {exc}") from exc
        twice = sorted(name for name, n in Counter(i.filename for i in self._infos).items()
                       if n > 1)
        if twice:
            self.close()
            raise ModelFileError(f"{path}: the archive holds {', '.join(map(repr, twice[:5]))} "
                                 "twice; refusing to guess which copy is the model")
        self._by_name = {info.filename: info for info in self._infos}
        self._size = os.path.getsize(path)

    def names(self) -> list[str]:
        return list(self._by_name)

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def read(self, name: str, limit: int) -> bytes:
        """The member's bytes; ModelFileError when it declares more than `limit`, more than its
        stored bytes can inflate to, or when it is damaged."""
        info = self._by_name[name]
        where = f"{self.path}: {name}"
        if info.file_size > limit:
            raise ModelFileError(f"{where} declares {readable_size(info.file_size)}, more than "
                                 f"the {readable_size(limit)} such a member may have")
        if info.compress_size > self._size:
            raise ModelFileError(f"{where} claims {readable_size(info.compress_size)} stored in "
                                 f"an archive of {readable_size(self._size)}")
        if info.compress_type == zipfile.ZIP_STORED:
            fits = info.file_size == info.compress_size
        else:
            fits = expansion_allowed(info.file_size, info.compress_size)
        if not fits:
            raise ModelFileError(f"{where} declares {readable_size(info.file_size)} from "
                                 f"{readable_size(info.compress_size)} stored (method "
                                 f"{info.compress_type}): refusing a possible decompression bomb")
        parts: list[bytes] = []
        got = 0
        try:
            with self._archive.open(info) as stream:
                while got <= info.file_size:
                    part = stream.read(min(_CHUNK, info.file_size + 1 - got))
                    if not part:
                        break
                    parts.append(part)
                    got += len(part)
        except _READ_ERRORS as exc:
            raise ModelFileError(f"{where}: damaged archive member: {exc}") from exc
        if got != info.file_size:
            raise ModelFileError(f"{where}: damaged archive member ({got} bytes, declared "
                                 f"{info.file_size})")
        return b"".join(parts)

    def close(self) -> None:
        self._archive.close()

    def __enter__(self) -> "KerasZip":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
