"""Stages: one module each, `run(request, ctx) -> response`; STAGES maps entry-point names to them, in the
order of the one stage catalog (relayrag.catalog.HTTP_STAGES)."""

import importlib

from relayrag.catalog import HTTP_STAGES
from relayrag.stages.base import Stage

STAGES: dict[str, Stage] = {name: importlib.import_module(f"relayrag.stages.{name}").STAGE for name in HTTP_STAGES}
