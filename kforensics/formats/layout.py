"""Fast paths derived from Construct declarations.

The Construct ``Struct`` of a fixed-size header is the only place its layout is
written down.  Hot loops cannot afford Construct's per-field interpretation, so
this module derives from that declaration what they need:

* a ``struct.Struct`` format (big-endian, same field order) for unpacking in
  Python;
* the byte offset and width of every field, for compiled kernels that read
  single fields straight out of a buffer.

Only fixed-width integer fields (Construct ``FormatField``) are accepted, so a
change to the declaration either flows through here or fails loudly.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from construct import FormatField, Renamed, Struct


@dataclass(frozen=True)
class FieldSpec:
    """One fixed-width field of a header: name, byte offset, width and signedness."""

    name: str
    offset: int
    size: int
    signed: bool
    fmt: str  # struct format character


@dataclass(frozen=True)
class FixedLayout:
    """The fixed layout of a Construct ``Struct`` of integer fields."""

    fields: tuple[FieldSpec, ...]
    struct: struct.Struct

    @property
    def size(self) -> int:
        return self.struct.size

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def offset(self, name: str) -> int:
        return self[name].offset

    def __getitem__(self, name: str) -> FieldSpec:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


def fixed_layout(declaration: Struct) -> FixedLayout:
    """Derive offsets and a ``struct.Struct`` from a Construct ``Struct`` of integers."""
    fields = []
    fmt = ">"
    offset = 0
    for sub in declaration.subcons:
        if not isinstance(sub, Renamed) or not isinstance(sub.subcon, FormatField):
            raise TypeError(f"fixed_layout needs named integer fields, got {sub!r}")
        ff: FormatField = sub.subcon
        if ff.fmtstr[0] != ">":
            raise TypeError(f"field {sub.name} is not big-endian")
        ch = ff.fmtstr[1]
        size = struct.calcsize(">" + ch)
        fields.append(FieldSpec(sub.name, offset, size, ch.islower(), ch))
        fmt += ch
        offset += size
    return FixedLayout(tuple(fields), struct.Struct(fmt))
