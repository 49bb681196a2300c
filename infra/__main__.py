"""relayrag on GCP: `pulumi up` in this folder. Everything is built by relayrag_infra.stack from the stack config."""

import pulumi

from relayrag_infra.config import config_from_pulumi
from relayrag_infra.stack import build

build(config_from_pulumi(pulumi.Config("relayrag"), pulumi.Config("gcp")))
