"""kit: Kaggle GPU kernels that train fast and always leave a valid submission."""
from kit.errors import KitError

__version__ = "0.1.0"
__all__ = ["KitError", "__version__"]
