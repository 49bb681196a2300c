"""The assistant, its MCP gateway and the Cloud SQL thread store under Pulumi mocks: what each identity may
do, who may invoke which service, how the assistant reaches the gateway (its URL, token secret, ID token at the
edge) and the thread store (Cloud SQL volume, URL secret)."""

from __future__ import annotations

import pytest

pytest.importorskip("pulumi", reason="pulumi is not installed: pip install -e '.[dev]'")
from tests.infra.harness import PROJECT, config, deploy  # noqa: E402
from tests.infra.test_stack import SA, _grants_of  # noqa: E402

RUN = "gcp:cloudrunv2/service:Service"
IMAGE = f"us-central1-docker.pkg.dev/{PROJECT}/relayrag-images/assistant:v1"
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_gcp")


@pytest.fixture(scope="module")
def stack():
    return deploy(config(assistant=True, assistant_image=IMAGE, assistant_members=("group:team@example.com",),
                         assistant_tokens="chat-a", mcp_tokens="mcp-a", assistant_db_password="pw-1"))


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


def test_the_cloud_sql_thread_store_option_is_reached_through_the_connector_volume(stack):
    db = stack.one("gcp:sql/databaseInstance:DatabaseInstance", "threads")
    assert db.inputs["databaseVersion"].startswith("POSTGRES_") and db.inputs["settings"]["tier"] == "db-f1-micro"
    assert not db.inputs["settings"]["ipConfiguration"].get("authorizedNetworks")
    bot = next(s for s in stack.of_type(RUN) if s.name == "assistant")
    tpl = bot.inputs["template"]
    assert tpl["volumes"][0]["cloudSqlInstance"]["instances"] == [f"{PROJECT}:us-central1:relayrag-threads"]
    assert tpl["containers"][0]["volumeMounts"][0]["mountPath"] == "/cloudsql"
    env = _envs(bot)
    assert env["RELAYRAG_AGENT_POSTGRES_URL"]["valueSource"]["secretKeyRef"]["secret"] == \
        stack.one("gcp:secretmanager/secret:Secret", "assistant-db-url").inputs["secretId"]
    url = stack.one("gcp:secretmanager/secretVersion:SecretVersion", "assistant-db-url-v").inputs["secretData"]
    assert url["value"] == f"postgresql://assistant:pw-1@/relayrag_threads?host=/cloudsql/{PROJECT}:us-central1:relayrag-threads"


def test_threads_live_in_firestore_by_default_in_relayrags_database_and_prefix(stack):
    # Firestore bills per operation and stored byte: an idle assistant costs nothing (docs/DESIGN.md)
    env = _envs(next(s for s in stack.of_type(RUN) if s.name == "assistant"))
    mcp_env = _envs(next(s for s in stack.of_type(RUN) if s.name == "mcp"))
    assert env["RELAYRAG_AGENT_CHECKPOINT"]["value"] == "firestore"
    for key in ("RELAYRAG_FIRESTORE_DATABASE", "RELAYRAG_FIRESTORE_PREFIX"):
        assert env[key]["value"] == mcp_env[key]["value"]


def test_identities_hold_exactly_their_grants(stack):
    bot, mcp = _grants_of(stack, _email(stack, "assistant")), _grants_of(stack, _email(stack, "mcp"))
    bot_roles = {g[1] for g in bot}
    assert {"roles/aiplatform.user", "roles/cloudsql.client"} <= bot_roles
    assert not bot_roles & {"roles/workflows.invoker", "roles/storage.objectViewer"}
    assert ("firestore", "roles/datastore.user") in bot  # its threads, on relayrag's database only
    assert ("project", "roles/datastore.user") not in bot
    mcp_roles = {g[1] for g in mcp}
    assert {"roles/workflows.invoker", "roles/datastore.user", "roles/storage.objectViewer"} <= mcp_roles
    assert not mcp_roles & {"roles/storage.objectUser", "roles/storage.objectAdmin", "roles/cloudsql.client"}


def test_no_image_yet_deploys_nothing_and_says_how(stack):
    rec = deploy(config(assistant=True))
    assert not rec.of_type(RUN) and not rec.of_type("gcp:sql/databaseInstance:DatabaseInstance")
    assert "assistantImage" in rec.deployment.assistant_skipped


def test_missing_secrets_are_refused_naming_the_key():
    with pytest.raises(ValueError, match="relayrag:mcpTokens"):
        config(assistant=True, assistant_image=IMAGE, assistant_tokens="a", assistant_db_password="b")
