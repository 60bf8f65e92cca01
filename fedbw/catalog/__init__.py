"""Named things users pick in configs and on the command line.

Every figure here carries its source in docs/catalog.md; values are typical, not guarantees.
"""

from fedbw.catalog.devices import DEVICE_PROFILES, DeviceProfile, get_device_profile
from fedbw.catalog.fabrics import FABRICS, Fabric, get_fabric
from fedbw.catalog.links import (LINK_PROFILES, NO_SERVER_LINK, SERVER_LINKS, LinkProfile, ServerLinkProfile,
                                 get_link_profile, get_server_link)
from fedbw.catalog.models import MODELS, ModelSpec, get_model, model_from_params

__all__ = [
    "DEVICE_PROFILES", "DeviceProfile", "get_device_profile",
    "FABRICS", "Fabric", "get_fabric",
    "LINK_PROFILES", "LinkProfile", "get_link_profile",
    "NO_SERVER_LINK", "SERVER_LINKS", "ServerLinkProfile", "get_server_link",
    "MODELS", "ModelSpec", "get_model", "model_from_params",
]
