"""The assistant, its MCP gateway and the Cloud SQL thread store under Pulumi mocks: what each identity may
do, who may invoke which service, how the assistant reaches the gateway (its URL, token secret, ID token at the
edge) and the thread store (private IP over Direct VPC egress, IAM database login, no password)."""

from __future__ import annotations

import pytest

pytest.importorskip("pulumi", reason="pulumi is not installed: pip install -e '.[dev]'")
from tests.infra.harness import PROJECT, SQL_PRIVATE_IP, config, deploy  # noqa: E402
from tests.infra.test_stack import SA, _grants_of  # noqa: E402

RUN = "gcp:cloudrunv2/service:Service"
IMAGE = f"us-central1-docker.pkg.dev/{PROJECT}/relayrag-images/assistant:v1"
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_gcp")


@pytest.fixture(scope="module")
def stack():
    return deploy(config(assistant=True, assistant_image=IMAGE, assistant_members=("group:team@example.com",),
                         assistant_tokens="chat-a", mcp_tokens="mcp-a"))


@pytest.fixture(scope="module")
def postgres():
    return deploy(config(assistant=True, assistant_image=IMAGE, assistant_members=("group:team@example.com",),
                         assistant_tokens="chat-a", mcp_tokens="mcp-a", assistant_threads="postgres"))


def _email(rec, logical: str) -> str:
    return next(r.outputs["email"] for r in rec.of_type(SA) if r.name == f"sa-{logical}")


def _envs(svc) -> dict:
    return {e["name"]: e for e in svc.inputs["template"]["containers"][0]["envs"]}


def test_two_services_from_one_image_with_their_own_commands_and_identities(stack):
    svcs = {s.name: s for s in stack.of_type(RUN)}
    assert set(svcs) == {"mcp", "assistant"}
    mcp, bot = svcs["mcp"], svcs["assistant"]
    assert mcp.inputs["template"]["containers"][0]["args"][:3] == ["relayrag", "mcp", "--http"]
    assert bot.inputs["template"]["containers"][0]["args"][:2] == ["relayrag", "chat-serve"]
    assert {s.inputs["template"]["containers"][0]["image"] for s in svcs.values()} == {IMAGE}
    assert mcp.inputs["template"]["serviceAccount"] == _email(stack, "mcp")
    assert bot.inputs["template"]["serviceAccount"] == _email(stack, "assistant")


def test_the_assistant_calls_the_gateway_with_its_identity_and_the_gateway_token(stack):
    svcs = {s.name: s for s in stack.of_type(RUN)}
    env = _envs(svcs["assistant"])
    assert env["RELAYRAG_AGENT_MCP_URL"]["value"] == "https://relayrag-mcp-abc123-uc.a.run.app/mcp"
    tokens = stack.one("gcp:secretmanager/secret:Secret", "mcp-tokens").inputs["secretId"]
    assert env["RELAYRAG_AGENT_MCP_TOKEN"]["valueSource"]["secretKeyRef"]["secret"] == tokens
    assert _envs(svcs["mcp"])["RELAYRAG_MCP_TOKENS"]["valueSource"]["secretKeyRef"]["secret"] == tokens
    invokers = [r for r in stack.of_type("gcp:cloudrunv2/serviceIamMember:ServiceIamMember")]
    on_mcp = {r.inputs["member"] for r in invokers if r.inputs["name"] == "relayrag-mcp"}
    on_bot = {r.inputs["member"] for r in invokers if r.inputs["name"] == "relayrag-assistant"}
    assert on_mcp == {f"serviceAccount:{_email(stack, 'assistant')}"}  # nobody else may reach the gateway
    assert on_bot == {"group:team@example.com"}
    assert "RELAYRAG_MCP_INGEST_ROOTS" not in _envs(svcs["mcp"])  # no ingest over the deployed gateway


INSTANCE = "gcp:sql/databaseInstance:DatabaseInstance"
SQL_APIS = {"sqladmin.googleapis.com", "servicenetworking.googleapis.com", "compute.googleapis.com"}


def test_the_cloud_sql_thread_store_has_no_public_ip_and_no_password(postgres):
    """S4: the instance has a private IP only (no public IPv4, so no authorized networks, let alone 0.0.0.0/0),
    requires TLS, has IAM database authentication on, and its only user is the assistant's identity as an IAM
    database user: no password exists in the config, the state or the service."""
    import json

    stack = postgres
    db = stack.one(INSTANCE, "threads").inputs
    ip = db["settings"]["ipConfiguration"]
    assert db["databaseVersion"].startswith("POSTGRES_") and db["settings"]["tier"] == "db-f1-micro"
    assert ip["ipv4Enabled"] is False
    assert not any(n.get("value") == "0.0.0.0/0" for n in ip.get("authorizedNetworks") or []) \
        and not ip.get("authorizedNetworks")
    network = stack.one("gcp:compute/network:Network", "threads-vpc")
    assert ip["privateNetwork"] == f"projects/{PROJECT}/global/networks/{network.inputs['name']}"
    assert ip["sslMode"] == "ENCRYPTED_ONLY"
    assert {"name": "cloudsql.iam_authentication", "value": "on"} in db["settings"]["databaseFlags"]
    # the threads are state; `pulumi destroy` and the Cloud SQL API both refuse to delete the instance
    assert db["deletionProtection"] is True and db["settings"]["deletionProtectionEnabled"] is True

    bot = _email(stack, "assistant")
    (user,) = stack.of_type("gcp:sql/user:User")
    assert user.inputs["type"] == "CLOUD_IAM_SERVICE_ACCOUNT" and user.inputs["instance"] == db["name"]
    assert user.inputs["name"] == bot.removesuffix(".gserviceaccount.com")  # relayrag-assistant@P.iam
    assert user.inputs["databaseRoles"] == ["cloudsqlsuperuser"]  # PostgreSQL 16: CREATE in public (setup())
    for r in stack.resources:
        assert "password" not in json.dumps(r.inputs, default=str).lower(), (r.typ, r.name)
    assert "assistant-db-url" not in {r.name for r in stack.of_type("gcp:secretmanager/secret:Secret")}

    grants = _grants_of(stack, bot)  # both conditioned on this instance only
    assert {("sql_instance", "roles/cloudsql.client"), ("sql_instance", "roles/cloudsql.instanceUser")} <= grants
    for r in stack.of_type("gcp:projects/iAMMember:IAMMember"):
        if r.inputs["role"].startswith("roles/cloudsql."):
            assert r.inputs["condition"]["expression"] == (
                f'resource.name == "projects/{PROJECT}/instances/{db["name"]}" && '
                'resource.type == "sqladmin.googleapis.com/Instance"')
    assert SQL_APIS <= {r.inputs["service"] for r in stack.of_type("gcp:projects/service:Service")}


def test_the_assistant_reaches_the_private_ip_and_logs_in_as_its_iam_user(postgres, monkeypatch):
    """Direct VPC egress into the threads subnet for private ranges only; the URL names the IAM user at the
    private IP with TLS and no password, and relayrag's settings read the service's env as an IAM login."""
    from urllib.parse import unquote, urlsplit

    from relayrag.settings import Settings

    stack = postgres
    bot = next(s for s in stack.of_type(RUN) if s.name == "assistant")
    tpl = bot.inputs["template"]
    assert not tpl.get("volumes") and not tpl["containers"][0].get("volumeMounts")  # no Cloud SQL socket
    (nic,) = tpl["vpcAccess"]["networkInterfaces"]
    assert tpl["vpcAccess"]["egress"] == "PRIVATE_RANGES_ONLY"
    subnet = stack.one("gcp:compute/subnetwork:Subnetwork", "threads-run-subnet").inputs
    assert nic == {"network": stack.one("gcp:compute/network:Network", "threads-vpc").inputs["name"],
                   "subnetwork": subnet["name"]} and subnet["region"] == "us-central1"
    env = _envs(bot)
    url = env["RELAYRAG_AGENT_POSTGRES_URL"]["value"]
    parts = urlsplit(url)
    assert parts.password is None and unquote(parts.username) == _email(stack, "assistant").removesuffix(
        ".gserviceaccount.com")
    assert (parts.hostname, parts.port, parts.path, parts.query) == (SQL_PRIVATE_IP, 5432, "/relayrag_threads",
                                                                     "sslmode=require")
    for name, var in env.items():
        if name.startswith("RELAYRAG_AGENT_"):
            monkeypatch.setenv(name, var.get("value") or "from-secret")
    settings = Settings(home="/tmp/relayrag")
    assert (settings.agent_checkpoint, settings.agent_postgres_url, settings.agent_postgres_iam_auth) == \
        ("postgres", url, True)


def test_cloud_sql_gets_its_private_ip_through_private_services_access(postgres):
    stack = postgres
    net = f"projects/{PROJECT}/global/networks/relayrag-threads"
    rng = stack.one("gcp:compute/globalAddress:GlobalAddress", "threads-psa-range").inputs
    assert (rng["purpose"], rng["addressType"], rng["network"]) == ("VPC_PEERING", "INTERNAL", net)
    psa = stack.one("gcp:servicenetworking/connection:Connection", "threads-psa").inputs
    assert psa["service"] == "servicenetworking.googleapis.com" and psa["network"] == net
    assert psa["reservedPeeringRanges"] == [rng["name"]]
    assert psa["deletionPolicy"] == "ABANDON"  # Cloud SQL still holds the peering while the stack is destroyed
    assert "threads-psa" in stack.deps(INSTANCE, "threads")  # the private IP comes from that peering


def test_threads_live_in_firestore_by_default_in_relayrags_database_and_prefix(stack):
    # Firestore bills per operation and stored byte: an idle assistant costs nothing (docs/DESIGN.md)
    env = _envs(next(s for s in stack.of_type(RUN) if s.name == "assistant"))
    mcp_env = _envs(next(s for s in stack.of_type(RUN) if s.name == "mcp"))
    assert env["RELAYRAG_AGENT_CHECKPOINT"]["value"] == "firestore"
    for key in ("RELAYRAG_FIRESTORE_DATABASE", "RELAYRAG_FIRESTORE_PREFIX"):
        assert env[key]["value"] == mcp_env[key]["value"]


def test_nothing_billed_at_rest_by_default_no_cloud_sql_unless_chosen(stack):
    """Issue 30: the default thread store is Firestore, so the default deploy creates no Cloud SQL instance (billed
    every hour it exists), database, user, network, peering, VPC egress, Cloud SQL grant or API."""
    assert not stack.of_type(INSTANCE)
    assert not stack.of_type("gcp:sql/database:Database") and not stack.of_type("gcp:sql/user:User")
    for typ in ("network:Network", "subnetwork:Subnetwork", "globalAddress:GlobalAddress"):
        assert not stack.of_type(f"gcp:compute/{typ}")
    assert not stack.of_type("gcp:servicenetworking/connection:Connection")
    bot = next(s for s in stack.of_type(RUN) if s.name == "assistant")
    assert not bot.inputs["template"].get("vpcAccess") and "RELAYRAG_AGENT_POSTGRES_URL" not in _envs(bot)
    assert not SQL_APIS & {r.inputs["service"] for r in stack.of_type("gcp:projects/service:Service")}
    assert not any(role.startswith("roles/cloudsql.") for _, role in _grants_of(stack, _email(stack, "assistant")))
    with pytest.raises(ValueError, match="relayrag:assistantThreads"):
        config(assistant_threads="mysql")


VERTEX = f"projects/{PROJECT}/roles/relayrag_vertex_predict"


def test_identities_hold_exactly_their_grants(stack):
    """S1: Gemini and the embedder through the stages' predict-only custom role, never roles/aiplatform.user;
    both services emit spans (roles/cloudtrace.agent)."""
    bot, mcp = _grants_of(stack, _email(stack, "assistant")), _grants_of(stack, _email(stack, "mcp"))
    assert bot == {("firestore", "roles/datastore.user"),  # its threads, on relayrag's database only
                   ("project", VERTEX), ("project", "roles/cloudtrace.agent"),
                   ("run:relayrag-mcp", "roles/run.invoker")}
    assert mcp == {("workflow", "roles/workflows.invoker"), ("project", "roles/bigquery.jobUser"),
                   ("project", VERTEX), ("project", "roles/cloudtrace.agent"),
                   ("firestore", "roles/datastore.user"), ("snapshots", "roles/storage.objectViewer"),
                   ("dataset", "roles/bigquery.dataViewer")}  # sql_query on the warehouse dataset


def test_services_export_spans_to_cloud_trace_and_know_their_memory(stack):
    for svc in stack.of_type(RUN):
        env = _envs(svc)
        assert env["OTEL_TRACES_EXPORTER"]["value"] == "gcp_trace", svc.name
        limit = svc.inputs["template"]["containers"][0]["resources"]["limits"]["memory"]
        assert env["RELAYRAG_MEMORY_LIMIT_MB"]["value"] == str(int(limit.removesuffix("Gi")) * 1024), svc.name


def test_the_gateway_reads_distributed_collections_and_the_warehouse_like_the_stages():
    """C5: with indexCollections set, `search` on the gateway reads the BigQuery index (env and a dataViewer
    grant on that dataset only, like retrieve's) instead of loading the whole snapshot; its warehouse dataset is
    the one the stack creates (dashes normalised) and names the same collections as the sql stage."""
    rec = deploy(config(assistant=True, assistant_image=IMAGE, assistant_tokens="a", mcp_tokens="m",
                        index_collections="kb,manuals", bigquery_dataset="team-data", bigquery_collections="sales",
                        index_dataset="rag-index"))
    created = {r.name: r.inputs["datasetId"] for r in rec.of_type("gcp:bigquery/dataset:Dataset")}
    assert created == {"warehouse": "team_data", "index": "rag_index"}
    mcp = _envs(next(s for s in rec.of_type(RUN) if s.name == "mcp"))
    fn = {f.inputs["buildConfig"]["entryPoint"]: f.inputs["serviceConfig"]["environmentVariables"]
          for f in rec.of_type("gcp:cloudfunctionsv2/function:Function")}
    for key in ("RELAYRAG_INDEX_DATASET", "RELAYRAG_INDEX_COLLECTIONS"):
        assert mcp[key]["value"] == fn["retrieve"][key], key
    assert mcp["RELAYRAG_INDEX_DATASET"]["value"] == f"{PROJECT}.rag_index"
    for key in ("RELAYRAG_BIGQUERY_DATASET", "RELAYRAG_BIGQUERY_COLLECTIONS", "RELAYRAG_BIGQUERY_MAX_BYTES_BILLED"):
        assert mcp[key]["value"] == fn["sql"][key], key
    assert mcp["RELAYRAG_BIGQUERY_DATASET"]["value"] == f"{PROJECT}.team_data"
    assert mcp["RELAYRAG_BIGQUERY_COLLECTIONS"]["value"] == "sales"

    def dataset_roles(logical):
        member = f"serviceAccount:{_email(rec, logical)}"
        return {(r.inputs["datasetId"], r.inputs["role"]) for r in
                rec.of_type("gcp:bigquery/datasetIamMember:DatasetIamMember") if r.inputs["member"] == member}
    assert ("rag_index", "roles/bigquery.dataViewer") in dataset_roles("retrieve")
    assert dataset_roles("mcp") == {("team_data", "roles/bigquery.dataViewer"),
                                    ("rag_index", "roles/bigquery.dataViewer")}


def test_no_image_yet_deploys_nothing_and_says_how(stack):
    rec = deploy(config(assistant=True))
    assert not rec.of_type(RUN) and not rec.of_type("gcp:sql/databaseInstance:DatabaseInstance")
    assert "assistantImage" in rec.deployment.assistant_skipped


def test_missing_secrets_are_refused_naming_the_key():
    with pytest.raises(ValueError, match="relayrag:mcpTokens"):
        config(assistant=True, assistant_image=IMAGE, assistant_tokens="a")
    for threads in ("firestore", "postgres"):  # neither thread store has a password
        config(assistant=True, assistant_image=IMAGE, assistant_tokens="a", mcp_tokens="m", assistant_threads=threads)


def test_secrets_are_read_with_get_secret():
    """S4: the program reads the tokens with config.get_secret (kept secret in the state and the output; a plain
    `get` of a secret warns and returns the plaintext); the secret Output reaches StackConfig as a secret Output
    (resources wrap it in Output.secret again). The postgres thread store has no password: a leftover
    `assistantDbPassword` is refused, naming the key."""
    from relayrag_infra.config import config_from_pulumi

    secrets = {"dashboardTokens", "assistantTokens", "mcpTokens"}
    values = {"project": PROJECT, "region": "us-central1", "assistant": "true", "assistantImage": IMAGE,
              "assistantThreads": "postgres", **{k: f"v-{k}" for k in secrets}}
    asked_plain, asked_secret = [], []

    class Cfg:
        def get(self, key):
            asked_plain.append(key)
            return values.get(key)

        def get_object(self, key):
            return None

        def get_secret(self, key):
            asked_secret.append(key)
            return pulumi.Output.secret(values[key]) if key in values else None

    import pulumi
    cfg = config_from_pulumi(Cfg(), Cfg())
    assert secrets <= set(asked_secret) and not (secrets | {"assistantDbPassword"}) & set(asked_plain)
    assert all(isinstance(getattr(cfg, a), pulumi.Output) for a in (
        "dashboard_tokens", "assistant_tokens", "mcp_tokens"))
    assert cfg.assistant_threads == "postgres"
    values["assistantDbPassword"] = "old"
    with pytest.raises(ValueError, match="relayrag:assistantDbPassword is no longer used"):
        config_from_pulumi(Cfg(), Cfg())
