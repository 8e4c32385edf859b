"""Models kit defines itself (image models come from timm, text encoders from transformers): the sequence models
(kit.models.sequence, with their registry), the text model (kit.models.text), and timm's names checked (kit.models.names).
Nothing is imported here, so that the build side can check a timm name without importing torch."""
