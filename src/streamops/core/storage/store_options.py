"""Options of each store, from the standard environment and configuration of its cloud.

The keys are Rust object_store's configuration keys, which both obstore (our reads) and
delta-rs (Delta tables) take, so every reader of a lake sees the same endpoint, region and
credentials:

- S3: `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`, else the AWS SDK's own
  chain through botocore (`AWS_PROFILE` and `~/.aws/{credentials,config}`, SSO, web identity,
  container and instance roles); `AWS_REGION`/`AWS_DEFAULT_REGION`; an S3-compatible endpoint
  from `AWS_ENDPOINT_URL_S3`/`AWS_ENDPOINT_URL`, with `AWS_ALLOW_HTTP=true` for plain http;
  `AWS_CONDITIONAL_PUT` (object_store's: `etag` by default, `disabled` for a store that cannot
  write only-if-absent, `dynamo:<table>`) for S3-compatible stores.
- Azure: `AZURE_STORAGE_ACCOUNT_NAME` (or the account in an abfss:// URI) and any of
  object_store's `AZURE_*` credentials (account key, SAS, client secret, federated token,
  managed identity endpoint, Azure CLI, the emulator).
- GCS: `GOOGLE_APPLICATION_CREDENTIALS` (or `GOOGLE_SERVICE_ACCOUNT*`), else gcloud's
  application-default credentials file.
Missing credentials are reported before any request, instead of letting a client wait on a
cloud metadata endpoint that is not there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from streamops.core.storage.errors import MissingCredentialsError, UnsupportedLocationError
from streamops.core.storage.store_root import StoreRoot

TRUE_VALUES = frozenset({"1", "true", "yes", "on"})
CONNECT_TIMEOUT = "5s"
REQUEST_TIMEOUT = "60s"
MAX_RETRIES = 3
RETRY_TIMEOUT_SECONDS = 20
"""A store that does not answer fails in seconds, not after object_store's default 3 minutes."""

AWS_STATIC_KEYS = {
    "AWS_ACCESS_KEY_ID": "aws_access_key_id",
    "AWS_SECRET_ACCESS_KEY": "aws_secret_access_key",
    "AWS_SESSION_TOKEN": "aws_session_token",
}
AWS_NATIVE_CREDENTIAL_VARIABLES = (
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)
"""Credential sources object_store reads by itself (EKS IRSA, ECS tasks)."""
AZURE_CREDENTIAL_VARIABLES = (
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_STORAGE_TOKEN",
    "AZURE_STORAGE_CLIENT_SECRET",
    "AZURE_CLIENT_SECRET",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_MSI_ENDPOINT",
    "AZURE_IDENTITY_ENDPOINT",
    "AZURE_USE_AZURE_CLI",
    "AZURE_STORAGE_USE_EMULATOR",
    "AZURE_SKIP_SIGNATURE",
)
GCS_CREDENTIAL_VARIABLES = {
    "GOOGLE_APPLICATION_CREDENTIALS": "google_application_credentials",
    "GOOGLE_SERVICE_ACCOUNT": "google_service_account",
    "GOOGLE_SERVICE_ACCOUNT_PATH": "google_service_account_path",
    "GOOGLE_SERVICE_ACCOUNT_KEY": "google_service_account_key",
}
GCLOUD_ADC = Path("~/.config/gcloud/application_default_credentials.json")


@dataclass(frozen=True)
class StoreOptions:
    """How to reach one bucket or container.

    `config` holds object_store keys; `credential_provider` (S3 credentials from the AWS SDK's
    chain) is for obstore, which refreshes them; delta-rs gets the current ones as keys.
    """

    root: StoreRoot
    config: Mapping[str, str]
    allow_http: bool = False
    credential_provider: Any = None
    endpoint: str | None = None
    client_options: Mapping[str, Any] = field(default_factory=dict)

    def delta_storage_options(self) -> dict[str, str]:
        """The same options as delta-rs `storage_options`."""
        options = dict(self.config)
        options["timeout"] = REQUEST_TIMEOUT
        options["connect_timeout"] = CONNECT_TIMEOUT
        options["max_retries"] = str(MAX_RETRIES)
        options["retry_timeout"] = f"{RETRY_TIMEOUT_SECONDS}s"
        if self.allow_http:
            options["allow_http"] = "true"
        if self.credential_provider is not None:
            current = self.credential_provider()
            options["aws_access_key_id"] = current["access_key_id"]
            options["aws_secret_access_key"] = current["secret_access_key"]
            if current.get("token"):
                options["aws_session_token"] = current["token"]
        return options


def store_options(root: StoreRoot, environ: Mapping[str, str] | None = None) -> StoreOptions:
    """Options for `root` from `environ` (default: the process environment)."""
    env = os.environ if environ is None else environ
    if root.kind == "s3":
        return _s3_options(root, env)
    if root.kind == "azure":
        return _azure_options(root, env)
    if root.kind == "gcs":
        return _gcs_options(root, env)
    raise UnsupportedLocationError(f"`{root.prefix}` is local: it needs no store options")


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in TRUE_VALUES


def _s3_options(root: StoreRoot, env: Mapping[str, str]) -> StoreOptions:
    config: dict[str, str] = {}
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT")
    if endpoint:
        config["aws_endpoint"] = endpoint
    if env.get("AWS_CONDITIONAL_PUT"):
        config["aws_conditional_put"] = env["AWS_CONDITIONAL_PUT"]
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    provider = None
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        config.update({key: env[name] for name, key in AWS_STATIC_KEYS.items() if env.get(name)})
    elif _flag(env, "AWS_SKIP_SIGNATURE"):
        config["aws_skip_signature"] = "true"
    elif not any(env.get(name) for name in AWS_NATIVE_CREDENTIAL_VARIABLES):
        provider, session_region = _aws_sdk_credentials(root, env)
        region = region or session_region
    if region:
        config["aws_region"] = region
    return StoreOptions(root, config, _flag(env, "AWS_ALLOW_HTTP"), provider, endpoint)


def _aws_sdk_credentials(root: StoreRoot, env: Mapping[str, str]) -> tuple[Any, str | None]:
    """Credentials from the AWS SDK's chain (profiles, SSO, roles), as the AWS CLI finds them."""
    import boto3
    import botocore.exceptions
    from obstore.auth.boto3 import Boto3CredentialProvider

    try:
        session = boto3.Session(profile_name=env.get("AWS_PROFILE") or None)
        found = session.get_credentials()
    except botocore.exceptions.ProfileNotFound as error:
        raise MissingCredentialsError(
            f"cannot read `{root.prefix}`: the AWS profile `{error.kwargs.get('profile')}` (AWS_PROFILE) "
            "is not in ~/.aws/config or ~/.aws/credentials: fix AWS_PROFILE or add the profile"
        ) from error
    except botocore.exceptions.BotoCoreError as error:
        raise MissingCredentialsError(
            f"cannot read `{root.prefix}`: the AWS credential configuration is unusable "
            f"({type(error).__name__}): check ~/.aws/config and the AWS_* variables"
        ) from error
    if found is None:
        raise MissingCredentialsError(
            f"no AWS credentials found for `{root.prefix}`: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (~/.aws/credentials), or run with an instance role"
        )
    return Boto3CredentialProvider(session), session.region_name


def _azure_options(root: StoreRoot, env: Mapping[str, str]) -> StoreOptions:
    account = root.account or env.get("AZURE_STORAGE_ACCOUNT_NAME")
    if not account:
        raise MissingCredentialsError(
            f"`{root.prefix}` names no storage account: set AZURE_STORAGE_ACCOUNT_NAME, or write "
            f"abfss://{root.container}@<account>.dfs.core.windows.net/<path>"
        )
    if not any(env.get(name) for name in AZURE_CREDENTIAL_VARIABLES) and not _azure_client_credentials(env):
        raise MissingCredentialsError(
            f"no Azure credentials found for `{root.prefix}`: set AZURE_STORAGE_ACCOUNT_KEY or "
            "AZURE_STORAGE_SAS_TOKEN, a service principal (AZURE_CLIENT_ID, AZURE_CLIENT_SECRET, "
            "AZURE_TENANT_ID), AZURE_FEDERATED_TOKEN_FILE, or AZURE_USE_AZURE_CLI=true"
        )
    config = {"azure_storage_account_name": account}
    endpoint = env.get("AZURE_STORAGE_ENDPOINT") or env.get("AZURE_ENDPOINT")
    if endpoint:
        config["azure_endpoint"] = endpoint
    elif _flag(env, "AZURE_STORAGE_USE_EMULATOR"):
        config["azure_storage_use_emulator"] = "true"
        endpoint = f"{env.get('AZURITE_BLOB_STORAGE_URL', 'http://127.0.0.1:10000').rstrip('/')}/{account}"
    allow_http = _flag(env, "AZURE_ALLOW_HTTP") or _flag(env, "AZURE_STORAGE_USE_EMULATOR")
    return StoreOptions(root, config, allow_http, None, endpoint)


def _azure_client_credentials(env: Mapping[str, str]) -> bool:
    return bool(env.get("AZURE_CLIENT_ID") and env.get("AZURE_TENANT_ID") and env.get("AZURE_CLIENT_SECRET"))


def _gcs_options(root: StoreRoot, env: Mapping[str, str]) -> StoreOptions:
    config = {key: env[name] for name, key in GCS_CREDENTIAL_VARIABLES.items() if env.get(name)}
    if _flag(env, "GOOGLE_SKIP_SIGNATURE"):
        config["google_skip_signature"] = "true"
    elif not config:
        adc = GCLOUD_ADC.expanduser()
        if not adc.is_file():
            raise MissingCredentialsError(
                f"no Google Cloud credentials found for `{root.prefix}`: set GOOGLE_APPLICATION_CREDENTIALS "
                "to a service account key file, or run `gcloud auth application-default login`"
            )
        config["google_application_credentials"] = str(adc)
    return StoreOptions(root, config, _flag(env, "GOOGLE_ALLOW_HTTP"), None, None)
