"""Runs the Pulumi program under `pulumi.runtime.set_mocks` (no Pulumi CLI, no cloud) and records every
resource it declares, with its inputs resolved, so tests assert on what `pulumi up` would create."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

pulumi = pytest.importorskip("pulumi", reason="pulumi is not installed: pip install -e '.[dev]' (infra tests)")
pytest.importorskip("pulumi_gcp", reason="pulumi-gcp is not installed: pip install -e '.[dev]' (infra tests)")

from relayrag_infra.config import StackConfig  # noqa: E402
from tests.infra.conftest import REPO_ROOT  # noqa: E402,F401

PROJECT = "relayrag-test-123"
PROJECT_NUMBER = "123456789"
GCS_AGENT = f"service-{PROJECT_NUMBER}@gs-project-accounts.iam.gserviceaccount.com"
SQL_PRIVATE_IP = "10.20.0.3"  # what the mocked Cloud SQL instance gets on its private network


@dataclass
class Resource:
    typ: str
    name: str
    inputs: dict
    outputs: dict


@dataclass
class Recorded:
    """What one mocked `pulumi up` declared."""

    resources: list[Resource] = field(default_factory=list)
    calls: list[tuple[str, dict]] = field(default_factory=list)
    deployment: object = None
    # (type, logical name) -> logical names of the resources in its `depends_on` (explicit edges only)
    depends_on: dict[tuple[str, str], set[str]] = field(default_factory=dict)

    def deps(self, typ: str, name: str) -> set[str]:
        return self.depends_on.get((typ, name), set())

    def of_type(self, typ: str) -> list[Resource]:
        return [r for r in self.resources if r.typ == typ]

    def one(self, typ: str, name: str) -> Resource:
        found = [r for r in self.resources if r.typ == typ and r.name == name]
        assert len(found) == 1, f"expected one {typ} named {name!r}, found {len(found)}"
        return found[0]


class RecordingMocks(pulumi.runtime.Mocks):
    """Returns plausible provider outputs (ids, emails, URLs) and records every declaration."""

    def __init__(self, rec: Recorded):
        self.rec = rec

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        inputs = dict(args.inputs)
        out = dict(inputs)
        rid = f"{args.name}-id"
        if args.typ == "gcp:serviceaccount/account:Account":
            email = f"{inputs['accountId']}@{PROJECT}.iam.gserviceaccount.com"
            rid = f"projects/{PROJECT}/serviceAccounts/{email}"
            out.update(email=email, member=f"serviceAccount:{email}", name=rid)
        elif args.typ == "gcp:cloudfunctionsv2/function:Function":
            svc = dict(inputs.get("serviceConfig") or {})
            svc.update(uri=f"https://{inputs['name']}-abc123-uc.a.run.app",
                       service=f"projects/{PROJECT}/locations/{inputs['location']}/services/{inputs['name']}")
            out.update(serviceConfig=svc, url=f"https://{inputs['location']}-{PROJECT}.cloudfunctions.net/"
                                              f"{inputs['name']}")
            rid = f"projects/{PROJECT}/locations/{inputs['location']}/functions/{inputs['name']}"
        elif args.typ == "gcp:cloudrunv2/service:Service":
            out["uri"] = f"https://{inputs['name']}-abc123-uc.a.run.app"
        elif args.typ == "gcp:sql/databaseInstance:DatabaseInstance":
            out["connectionName"] = f"{PROJECT}:{inputs['region']}:{inputs['name']}"
            ip = inputs.get("settings", {}).get("ipConfiguration", {})
            if ip.get("privateNetwork"):
                out["privateIpAddress"] = SQL_PRIVATE_IP
            if ip.get("ipv4Enabled", True):
                out["publicIpAddress"] = "203.0.113.7"
        elif args.typ == "gcp:compute/network:Network":
            rid = f"projects/{PROJECT}/global/networks/{inputs['name']}"
        elif args.typ == "gcp:projects/serviceIdentity:ServiceIdentity":
            agent = f"service-123456789@gcp-sa-{inputs['service'].split('.')[0]}.iam.gserviceaccount.com"
            out.update(email=agent, member=f"serviceAccount:{agent}")
        elif args.typ == "gcp:workflows/workflow:Workflow":
            rid = f"projects/{PROJECT}/locations/{inputs['region']}/workflows/{inputs['name']}"
        elif args.typ == "gcp:pubsub/topic:Topic":
            rid = f"projects/{PROJECT}/topics/{inputs['name']}"
        elif args.typ == "gcp:pubsub/subscription:Subscription":
            rid = f"projects/{PROJECT}/subscriptions/{inputs['name']}"
        elif args.typ == "gcp:projects/iAMCustomRole:IAMCustomRole":
            out["name"] = f"projects/{PROJECT}/roles/{inputs['roleId']}"
        self.rec.resources.append(Resource(args.typ, args.name, inputs, out))
        return [rid, out]

    def call(self, args: pulumi.runtime.MockCallArgs):
        self.rec.calls.append((args.token, dict(args.args)))
        if args.token == "gcp:storage/getProjectServiceAccount:getProjectServiceAccount":
            return {"emailAddress": GCS_AGENT, "member": f"serviceAccount:{GCS_AGENT}", "project": PROJECT}
        if args.token == "gcp:organizations/getProject:getProject":
            return {"projectId": args.args.get("projectId") or PROJECT, "number": PROJECT_NUMBER,
                    "name": PROJECT, "id": f"projects/{PROJECT}"}
        return {}


def deploy(cfg: StackConfig) -> Recorded:
    """Run relayrag_infra.stack.build(cfg) under mocks; return every declared resource."""
    from relayrag_infra import stack

    rec = Recorded()
    # Pulumi's mocks run on the thread's current event loop; an earlier test (anyio/fastmcp) may have
    # closed it or left none set, so each mocked deployment gets a fresh one.
    asyncio.set_event_loop(asyncio.new_event_loop())
    pulumi.runtime.set_mocks(RecordingMocks(rec), project="relayrag", stack="test", preview=False)

    original = pulumi.CustomResource.__init__

    def recording_init(self, t, name, props=None, opts=None, *args, **kw):
        deps = getattr(opts, "depends_on", None) or []
        deps = deps if isinstance(deps, list) else [deps]
        rec.depends_on[(t, name)] = {getattr(d, "_name", None) for d in deps if d is not None}
        original(self, t, name, props, opts, *args, **kw)

    @pulumi.runtime.test
    def program():
        rec.deployment = stack.build(cfg)

    pulumi.CustomResource.__init__ = recording_init
    try:
        program()
    finally:
        pulumi.CustomResource.__init__ = original
    return rec


def config(**kw) -> StackConfig:
    return StackConfig(project=PROJECT, region="us-central1", **kw)

