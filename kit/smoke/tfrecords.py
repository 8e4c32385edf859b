"""TFRecord files for smoke data, as competitions ship them beside their images (cassava's train_tfrecords/): each
record a tf.train.Example of bytes and int64 features, framed as TensorFlow frames it (length, masked CRC-32C of
the length, the record, masked CRC-32C of the record). Written without TensorFlow, which kit does not need:
kit reads the images, never these files, but a competition's folder holds them."""
from __future__ import annotations

import struct
from collections.abc import Mapping
from pathlib import Path


def _crc_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)  # CRC-32C (Castagnoli), reflected
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked(data: bytes) -> int:
    """TFRecord's masked CRC: the CRC rotated right by 15 bits plus a constant."""
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def example(features: Mapping[str, bytes | int]) -> bytes:
    """A serialized tf.train.Example: bytes values as a BytesList (Feature field 1), ints as an Int64List (field 3,
    packed); Example.features (1) -> Features.feature (1), a map of name (1) to Feature (2)."""
    entries = b""
    for name, value in features.items():
        if isinstance(value, bytes):
            feature = _field(1, _field(1, value))
        else:
            feature = _field(3, _field(1, _varint(value & 0xFFFFFFFFFFFFFFFF)))
        entries += _field(1, _field(1, name.encode()) + _field(2, feature))
    return _field(1, entries)


def write(records: list[Mapping[str, bytes | int]], dest: Path) -> Path:
    """`records` (each a mapping of feature name to bytes or int) as Examples in the TFRecord file `dest`."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as f:
        for record in records:
            data = example(record)
            length = struct.pack("<Q", len(data))
            f.write(length + struct.pack("<I", masked(length)) + data + struct.pack("<I", masked(data)))
    return dest


def read(path: Path) -> list[bytes]:
    """The serialized records of a TFRecord file, each frame's CRCs checked (ValueError on a bad one)."""
    blob, out, at = path.read_bytes(), [], 0
    while at < len(blob):
        length = blob[at:at + 8]
        (size,) = struct.unpack("<Q", length)
        data = blob[at + 12:at + 12 + size]
        if struct.unpack("<I", blob[at + 8:at + 12])[0] != masked(length) or \
                struct.unpack("<I", blob[at + 12 + size:at + 16 + size])[0] != masked(data):
            raise ValueError(f"{path}: a record's CRC does not match at byte {at}")
        out.append(data)
        at += 16 + size
    return out
