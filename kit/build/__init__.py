"""The build side, run on a laptop: notebooks from templates, kernel metadata, bundles, pushing."""
