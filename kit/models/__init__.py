"""Models kit defines itself (image models come from timm): the sequence models' registry."""
from kit.models.sequence import create_model, list_models, register_model

__all__ = ["create_model", "list_models", "register_model"]
