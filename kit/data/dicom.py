"""DICOM images (vinbigdata's .dicom, siim-covid19's and rsna's .dcm) as uint8, for the decode-once image cache.

pydicom reads them; it is not on Kaggle's image, so a DICOM config lists it in [kernel] packages (with a decoder
package for compressed files). What pydicom decodes alone: uncompressed files and RLE Lossless; with Pillow (on the
image) 8-bit JPEG Baseline and JPEG 2000. JPEG Lossless and JPEG-LS need a decoder plugin (pylibjpeg-libjpeg,
pyjpegls or python-gdcm): a file whose decoder is missing is refused in one line naming the packages pydicom asks for.

The pixels become uint8 by the file's window: its VOI LUT sequence where it has one, else its window centre and
width, else the image's own min..max; MONOCHROME1 (white is 0) is inverted so that bright is dense as everywhere
else. 8-, 12- and 16-bit, signed or not, after the modality rescale (slope and intercept).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from kit.errors import KitError


def _pydicom():
    try:
        import pydicom  # optional: only DICOM competitions need it, and Kaggle's image lacks it
        import pydicom.pixels
    except ImportError:
        raise KitError('reading DICOM files needs pydicom: add "pydicom" to the config\'s [kernel] packages') from None
    return pydicom


def read_dicom(path: str | Path) -> np.ndarray:
    """The file's first frame as (H, W) uint8, windowed (VOI LUT, else window centre/width, else min-max), and
    inverted where it is MONOCHROME1."""
    pydicom = _pydicom()
    try:
        ds = pydicom.dcmread(str(path))
    except (pydicom.errors.InvalidDicomError, OSError, EOFError) as e:
        raise KitError(f"{path}: not a DICOM file pydicom can read ({e})") from None
    syntax = ds.file_meta.TransferSyntaxUID
    decoder = pydicom.pixels.get_decoder(syntax) if syntax.is_compressed else None
    if decoder is not None and not decoder.is_available:
        raise KitError(f"{Path(path).name}: its pixels are {syntax.name} ({syntax}), which nothing here decodes: add a "
                       f"decoder to the config's [kernel] packages ({'; or '.join(decoder.missing_dependencies)})")
    try:
        pixels = ds.pixel_array
    except (RuntimeError, NotImplementedError, ValueError) as e:
        raise KitError(f"{Path(path).name}: its {syntax.name} pixels did not decode ({type(e).__name__}: "
                       f"{str(e).splitlines()[0] if str(e) else ''})") from None
    if pixels.ndim == 3 and int(getattr(ds, "NumberOfFrames", 1) or 1) > 1:
        pixels = pixels[0]  # (frames, H, W): the first frame
    if pixels.ndim != 2:
        raise KitError(f"{Path(path).name}: {pixels.shape} pixels ({ds.get('PhotometricInterpretation', '?')}): kit reads "
                       "one grey frame a file")
    return to_uint8(ds, pixels)


def to_uint8(ds, pixels: np.ndarray) -> np.ndarray:
    """The dataset's pixels windowed into uint8 (the window's low edge 0, its high edge 255)."""
    lut = _pydicom().pixels
    modality = lut.apply_modality_lut(pixels, ds)  # stored values as they are where nothing rescales them
    values = modality.astype(np.float64)
    if "VOILUTSequence" in ds:  # a lookup table: its entries span 0 .. 2**bits - 1
        values = lut.apply_voi_lut(modality, ds, index=0).astype(np.float64)
        low, high = 0.0, float(2 ** int(ds.VOILUTSequence[0].LUTDescriptor[2]) - 1)
    elif "WindowCenter" in ds and "WindowWidth" in ds:  # DICOM's linear window (PS3.3 C.11.2.1.2.1), the first one
        centre, width = _first(ds.WindowCenter), max(_first(ds.WindowWidth), 1.0)
        low, high = centre - 0.5 - (width - 1) / 2, centre - 0.5 + (width - 1) / 2
    else:
        low, high = float(values.min()), float(values.max())
    scaled = np.clip((values - low) / (high - low), 0.0, 1.0) if high > low else np.zeros_like(values)
    if ds.get("PhotometricInterpretation", "MONOCHROME2") == "MONOCHROME1":
        scaled = 1.0 - scaled
    return np.round(scaled * 255.0).astype(np.uint8)


def _first(value) -> float:
    """A window value, of one window or several (a MultiValue): the first."""
    return float(np.atleast_1d(np.asarray(value, dtype=np.float64))[0])
