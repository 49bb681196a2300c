"""The assistant's optional thread store in Cloud SQL for PostgreSQL (`relayrag:assistantThreads: postgres`):
private IP only, IAM database authentication, no password anywhere.

- a VPC `<prefix>-threads` (custom mode) with one subnet, `<prefix>-threads-run` (SUBNET_RANGE), through which
  the assistant's Cloud Run service reaches private addresses (Direct VPC egress, PRIVATE_RANGES_ONLY: Google
  APIs and the gateway are reached as before; https://cloud.google.com/run/docs/configuring/vpc-direct-vpc);
- private services access on that VPC: an allocated range (a /PSA_PREFIX_LENGTH internal global address for
  VPC peering) and the Service Networking connection Cloud SQL takes its private IP from
  (https://cloud.google.com/sql/docs/postgres/configure-private-services-access). The connection is
  abandoned, not deleted, on `pulumi destroy`: deleting the peering fails while Cloud SQL still holds
  addresses in it (pulumi-gcp's `deletion_policy` documents ABANDON for exactly this);
- the instance `<prefix>-threads`: POSTGRES_16, no public IP (`ipv4_enabled` false: nothing to list in
  authorized networks), a private IP on that VPC, TLS required (ENCRYPTED_ONLY), the `cloudsql.iam_authentication`
  flag on, deletion protection on both sides, automated backups;
- the database `relayrag_threads` and the assistant's identity as its IAM database user
  (CLOUD_IAM_SERVICE_ACCOUNT, named as Cloud SQL names it: the email without `.gserviceaccount.com`), a member
  of `cloudsqlsuperuser`: on PostgreSQL 15 and later only the database owner and that role may create tables
  in `public`, and the checkpointer creates and migrates its own (AsyncPostgresSaver.setup); the instance holds
  nothing but the threads;
- the identity's roles/cloudsql.instanceUser (cloudsql.instances.login: the IAM login) and roles/cloudsql.client
  (cloudsql.instances.connect/get, what the Cloud SQL Auth Proxy and the language connectors check), each
  with an IAM condition naming the instance, as Google's sample for Cloud SQL does
  (terraform-google-modules/terraform-docs-samples, cloud_sql/instance_iam_condition).

The assistant connects over TCP to the private IP: RELAYRAG_AGENT_POSTGRES_URL =
postgresql://IAM_USER@PRIVATE_IP:5432/relayrag_threads?sslmode=require (no password: not a secret) and
RELAYRAG_AGENT_POSTGRES_IAM_AUTH=true, so each new connection's password is a current access token of the
service's identity (relayrag.agent.threads.IamLoginPassword;
https://cloud.google.com/sql/docs/postgres/iam-logins, manual IAM database authentication).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote

import pulumi
import pulumi_gcp as gcp

from relayrag_infra.config import StackConfig

DB_NAME = "relayrag_threads"
DATABASE_VERSION = "POSTGRES_16"
SUBNET_RANGE = "10.8.0.0/24"
"""Direct VPC egress takes the instances' addresses from this subnet (at least a /26 is recommended)."""
PSA_PREFIX_LENGTH = 20
"""Size of the range private services access allocates to Google's producer network (Cloud SQL's private IPs)."""
IAM_ROLES = ("roles/cloudsql.instanceUser", "roles/cloudsql.client")
IAM_AUTH_FLAG = "cloudsql.iam_authentication"
SA_EMAIL_SUFFIX = ".gserviceaccount.com"


@dataclass
class ThreadsDb:
    """What the assistant's service needs from the thread store."""

    instance: gcp.sql.DatabaseInstance
    url: pulumi.Output[str]
    vpc_access: gcp.cloudrunv2.ServiceTemplateVpcAccessArgs
    ready: list[pulumi.Resource] = field(default_factory=list)
    """The database, the IAM user and the grants: the assistant's startup logs in, so it waits for them."""


def iam_db_user(email: str) -> str:
    """The PostgreSQL user name of a service account's IAM database user: its email without
    `.gserviceaccount.com` (relayrag-assistant@P.iam.gserviceaccount.com -> relayrag-assistant@P.iam)."""
    return email[: -len(SA_EMAIL_SUFFIX)] if email.endswith(SA_EMAIL_SUFFIX) else email


def connection_url(user: str, host: str, database: str = DB_NAME) -> str:
    """postgresql://USER@HOST:5432/DATABASE?sslmode=require with the user percent-encoded (it holds an @) and
    no password: the IAM login sends a token instead."""
    return f"postgresql://{quote(user, safe='')}@{host}:5432/{database}?sslmode=require"


def instance_condition(project: str, instance_name: pulumi.Input[str]) -> gcp.projects.IAMMemberConditionArgs:
    expression = pulumi.Output.from_input(instance_name).apply(
        lambda n: f'resource.name == "projects/{project}/instances/{n}" && '
                  'resource.type == "sqladmin.googleapis.com/Instance"')
    return gcp.projects.IAMMemberConditionArgs(title="relayrag-threads-instance-only", expression=expression,
                                               description="The assistant's thread store only")


def build(cfg: StackConfig, sa: gcp.serviceaccount.Account, member: pulumi.Input[str], labels: dict,
          after_apis: pulumi.ResourceOptions) -> ThreadsDb:
    """Declare the network, the instance, its database, the IAM user of `sa` and its grants (module docstring)."""
    project, region, prefix = cfg.project, cfg.region, cfg.prefix
    network = gcp.compute.Network("threads-vpc", project=project, name=f"{prefix}-threads",
                                  auto_create_subnetworks=False, opts=after_apis,
                                  description="relayrag: the assistant's private path to its Cloud SQL threads")
    subnet = gcp.compute.Subnetwork("threads-run-subnet", project=project, region=region,
                                    name=f"{prefix}-threads-run", network=network.id, ip_cidr_range=SUBNET_RANGE)
    psa_range = gcp.compute.GlobalAddress("threads-psa-range", project=project, name=f"{prefix}-threads-psa",
                                          purpose="VPC_PEERING", address_type="INTERNAL",
                                          prefix_length=PSA_PREFIX_LENGTH, network=network.id)
    peering = gcp.servicenetworking.Connection("threads-psa", network=network.id,
                                               service="servicenetworking.googleapis.com",
                                               reserved_peering_ranges=[psa_range.name], deletion_policy="ABANDON")
    instance = gcp.sql.DatabaseInstance(
        "threads", project=project, region=region, name=f"{prefix}-threads", database_version=DATABASE_VERSION,
        deletion_protection=True,  # the threads are state: `pulumi destroy` refuses until this is turned off
        settings=gcp.sql.DatabaseInstanceSettingsArgs(
            tier=cfg.assistant_db_tier, edition="ENTERPRISE", availability_type="ZONAL",
            deletion_protection_enabled=True, user_labels=labels,
            database_flags=[gcp.sql.DatabaseInstanceSettingsDatabaseFlagArgs(name=IAM_AUTH_FLAG, value="on")],
            ip_configuration=gcp.sql.DatabaseInstanceSettingsIpConfigurationArgs(
                ipv4_enabled=False, private_network=network.id, ssl_mode="ENCRYPTED_ONLY"),
            backup_configuration=gcp.sql.DatabaseInstanceSettingsBackupConfigurationArgs(enabled=True)),
        opts=pulumi.ResourceOptions.merge(after_apis, pulumi.ResourceOptions(depends_on=[peering])))
    database = gcp.sql.Database("threads-db", project=project, instance=instance.name, name=DB_NAME)
    user_name = sa.email.apply(iam_db_user)
    db_user = gcp.sql.User("threads-iam-user", project=project, instance=instance.name, name=user_name,
                           type="CLOUD_IAM_SERVICE_ACCOUNT", database_roles=["cloudsqlsuperuser"])
    grants = [gcp.projects.IAMMember(f"assistant-threads-{role.split('/')[1].replace('.', '-')}", project=project,
                                     role=role, member=member, condition=instance_condition(project, instance.name))
              for role in IAM_ROLES]
    url = pulumi.Output.all(user_name, instance.private_ip_address).apply(lambda a: connection_url(a[0], a[1]))
    vpc_access = gcp.cloudrunv2.ServiceTemplateVpcAccessArgs(
        egress="PRIVATE_RANGES_ONLY",
        network_interfaces=[gcp.cloudrunv2.ServiceTemplateVpcAccessNetworkInterfaceArgs(
            network=network.name, subnetwork=subnet.name)])
    return ThreadsDb(instance=instance, url=url, vpc_access=vpc_access, ready=[database, db_user, subnet, *grants])
