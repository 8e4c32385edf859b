"""Segmentation's kinds of target, registered from its own rooms (kit.train.kinds.register): masks (or pages) of
every test image, not a row of outputs. Their submission checks are the mask rooms', named by dotted path and
imported only for a submission of them. The segmentation pipeline imports this module (kit.pipelines.segmentation_data
makes its targets), and the template's record names it (`kinds`) for a resource plan made without the pipeline."""
from kit.train.kinds import Kind, register, value_column

PIXELS = register(Kind("pixels", value_column, "numbers", masks=True))  # a value per pixel
FILES = register(Kind("files", value_column, "kit.data.masks:check_submission", masks=True))  # a mask file per image
RLE = register(Kind("rle", value_column, "kit.data.rle:check_submission", masks=True))  # run-length codes
