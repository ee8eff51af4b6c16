"""The dualtrack REST service (FastAPI) over the SDK: ``create_app``."""

from service.app import create_app

__all__ = ["create_app"]
