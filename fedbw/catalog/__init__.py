"""Named things users pick in configs and on the command line.

Every figure here carries its source in docs/catalog.md; values are typical, not guarantees.
"""

from fedbw.catalog.devices import DEVICE_PROFILES, DeviceProfile, get_device_profile
from fedbw.catalog.fabrics import FABRICS, Fabric, get_fabric
from fedbw.catalog.links import LINK_PROFILES, LinkProfile, get_link_profile
from fedbw.catalog.models import MODELS, ModelSpec, get_model, model_from_params

__all__ = [
    "DEVICE_PROFILES", "DeviceProfile", "get_device_profile",
    "FABRICS", "Fabric", "get_fabric",
    "LINK_PROFILES", "LinkProfile", "get_link_profile",
    "MODELS", "ModelSpec", "get_model", "model_from_params",
]
