"""Every stage of the workflow by name: STAGES maps each entry-point name to its `Stage`, in the order of the one
stage catalog (relayrag.catalog.HTTP_STAGES). Importing this module imports every stage module: the embedded
engine, the service and the tools use it; a deployed function does not (it imports `relayrag.stages.<name>` of its
own stage only, and its bundle holds no other stage)."""

import importlib

from relayrag.catalog import HTTP_STAGES
from relayrag.stages.base import Stage

STAGES: dict[str, Stage] = {name: importlib.import_module(f"relayrag.stages.{name}").STAGE for name in HTTP_STAGES}
