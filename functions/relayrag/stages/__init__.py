"""Stages: one module each, `run(request, ctx) -> response`, named after its entry point
(relayrag.catalog.HTTP_STAGES). This package imports none of them: a deployed function imports its own stage
module only (its bundle carries no other; infra/relayrag_infra/catalog.py), and relayrag.stage_registry.STAGES
maps every name to its stage for the embedded engine and the tools."""
