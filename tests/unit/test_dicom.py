"""kit.data.dicom on files written here with pydicom at 8 x 6 pixels: uncompressed and RLE Lossless (which pydicom
decodes alone), JPEG Baseline (Pillow's), MONOCHROME1 and 2, 8-, 12- and 16-bit, windows; a JPEG Lossless and a
JPEG-LS file whose decoder is missing refused in one line."""
import io

import numpy as np
import pytest

pydicom = pytest.importorskip("pydicom")  # the dev extras install it (pyproject.toml); a kernel lists it in packages

from PIL import Image  # noqa: E402
from pydicom.dataset import Dataset, FileMetaDataset  # noqa: E402
from pydicom.encaps import encapsulate  # noqa: E402
from pydicom.uid import (  # noqa: E402
    ExplicitVRLittleEndian,
    JPEGBaseline8Bit,
    JPEGLosslessSV1,
    JPEGLSLossless,
    RLELossless,
    generate_uid,
)

from kit.data.dicom import read_dicom  # noqa: E402
from kit.errors import KitError  # noqa: E402

RAMP = np.arange(48).reshape(6, 8)  # (H, W), every value distinct


def dataset(pixels: np.ndarray, bits: int, photometric: str = "MONOCHROME2", signed: bool = False) -> Dataset:
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.1.1"  # digital X-ray
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.Rows, ds.Columns = pixels.shape
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, photometric
    ds.BitsAllocated, ds.BitsStored, ds.HighBit = (8 if bits == 8 else 16), bits, bits - 1
    ds.PixelRepresentation = int(signed)
    dtype = np.uint8 if bits == 8 else (np.int16 if signed else np.uint16)
    ds.PixelData = pixels.astype(dtype).tobytes()
    return ds


def write(tmp_path, name: str, ds: Dataset):
    path = tmp_path / name
    ds.save_as(path, enforce_file_format=True)
    return path


@pytest.mark.parametrize("bits,scale", [(8, 5), (12, 85), (16, 1365)])
@pytest.mark.parametrize("syntax", [ExplicitVRLittleEndian, RLELossless])
def test_a_ramp_reads_as_its_min_max_in_uint8_at_every_depth_plain_and_rle(tmp_path, bits, scale, syntax):
    ds = dataset(RAMP * scale, bits)
    if syntax == RLELossless:
        ds.compress(RLELossless)
    image = read_dicom(write(tmp_path, "a.dicom", ds))
    assert pydicom.dcmread(tmp_path / "a.dicom").file_meta.TransferSyntaxUID == syntax
    assert image.dtype == np.uint8 and image.shape == (6, 8)
    np.testing.assert_array_equal(image, np.round(RAMP / 47 * 255).astype(np.uint8))


def test_monochrome1_is_inverted_so_that_dense_is_bright(tmp_path):
    two = read_dicom(write(tmp_path, "2.dcm", dataset(RAMP * 85, 12)))
    one = read_dicom(write(tmp_path, "1.dcm", dataset(RAMP * 85, 12, "MONOCHROME1")))
    np.testing.assert_array_equal(one, 255 - two)
    assert one[0, 0] == 255 and one[-1, -1] == 0


def test_the_files_window_centre_and_width_decide_the_range_after_the_rescale(tmp_path):
    """A CT-like file: stored 0..4095 with intercept -1024 (values -1024..3071), window 40/400 (-160..240 after
    DICOM's half-pixel offsets): below it black, above it white, inside linear."""
    stored = np.linspace(0, 4095, 48).reshape(6, 8).round()
    ds = dataset(stored, 12)
    ds.RescaleIntercept, ds.RescaleSlope = -1024, 1
    ds.WindowCenter, ds.WindowWidth = [40, 400], [400, 1000]  # two windows: the first is read
    image = read_dicom(write(tmp_path, "w.dcm", ds))
    values = stored - 1024
    low, high = 40 - 0.5 - 399 / 2, 40 - 0.5 + 399 / 2
    expected = np.round(np.clip((values - low) / (high - low), 0, 1) * 255).astype(np.uint8)
    np.testing.assert_array_equal(image, expected)
    assert (image == 0).any() and (image == 255).any() and ((image > 0) & (image < 255)).any()


def test_signed_16_bit_pixels_read_min_max(tmp_path):
    image = read_dicom(write(tmp_path, "s.dcm", dataset(RAMP * 1000 - 20000, 16, signed=True)))
    np.testing.assert_array_equal(image, np.round(RAMP / 47 * 255).astype(np.uint8))


def test_a_voi_lut_sequence_maps_the_pixels(tmp_path):
    ds = dataset(RAMP, 8)
    item = Dataset()
    item.LUTDescriptor = [48, 0, 8]  # 48 entries from stored value 0, 8-bit output
    item.LUTData = (255 - np.arange(48)).astype(np.uint16).tobytes()  # a table that inverts (OW words)
    ds.VOILUTSequence = [item]
    image = read_dicom(write(tmp_path, "l.dcm", ds))
    np.testing.assert_array_equal(image, 255 - RAMP)


def test_jpeg_baseline_decodes_with_pillow(tmp_path):
    ds = dataset(RAMP * 5, 8)
    buffer = io.BytesIO()
    Image.fromarray((RAMP * 5).astype(np.uint8)).save(buffer, format="JPEG", quality=100)
    ds.PixelData = encapsulate([buffer.getvalue()])
    ds.file_meta.TransferSyntaxUID = JPEGBaseline8Bit
    ds["PixelData"].VR = "OB"
    image = read_dicom(write(tmp_path, "j.dcm", ds))
    assert np.abs(image.astype(int) - np.round(RAMP / 47 * 255)).max() <= 8  # lossy


@pytest.mark.parametrize("syntax", [JPEGLosslessSV1, JPEGLSLossless])
def test_a_compressed_file_without_its_decoder_is_refused_in_one_line(tmp_path, syntax):
    if pydicom.pixels.get_decoder(syntax).is_available:
        pytest.skip(f"a decoder for {syntax.name} is installed here")
    ds = dataset(RAMP, 8)
    ds.PixelData = encapsulate([b"\xff\xd8\xff\xd9"])
    ds.file_meta.TransferSyntaxUID = syntax
    ds["PixelData"].VR = "OB"
    with pytest.raises(KitError) as e:
        read_dicom(write(tmp_path, "x.dcm", ds))
    assert "\n" not in str(e.value)
    assert str(e.value).startswith(f"x.dcm: its pixels are {syntax.name} ({syntax}), which nothing here decodes: add a "
                                   "decoder to the config's [kernel] packages (")
    assert "pylibjpeg-libjpeg" in str(e.value)


def test_a_file_that_is_not_dicom_is_one_line(tmp_path):
    path = tmp_path / "n.dcm"
    path.write_bytes(b"not a dicom file at all")
    with pytest.raises(KitError, match=r"n.dcm: not a DICOM file pydicom can read"):
        read_dicom(path)
