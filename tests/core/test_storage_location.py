"""Parsing and naming of locations, and the store options each cloud's environment gives:
no network needed, so every URI form and every credential source is checked here."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from streamops.core.storage.errors import MissingCredentialsError, UnsupportedLocationError
from streamops.core.storage.location import Location
from streamops.core.storage.store_options import store_options
from streamops.core.storage.store_root import StoreRoot


@pytest.mark.parametrize(
    ("text", "kind", "container", "key", "account"),
    [
        ("s3://bucket/lake/checkpoints", "s3", "bucket", "lake/checkpoints", None),
        ("s3a://bucket/lake/", "s3", "bucket", "lake", None),
        ("gs://bucket//lake/./x", "gcs", "bucket", "lake/x", None),
        ("az://container/lake", "azure", "container", "lake", None),
        ("abfss://lakes@acct.dfs.core.windows.net/fleet", "azure", "lakes", "fleet", "acct"),
        ("s3://bucket", "s3", "bucket", "", None),
    ],
)
def test_uris_name_their_store_container_and_key(text, kind, container, key, account):
    location = Location.of(text)
    assert (location.root.kind, location.root.container, location.key, location.root.account) == (
        kind,
        container,
        key,
        account,
    )
    assert not location.is_local and not location.atomic_rename
    assert Location.of(str(location)) == location


def test_plain_paths_and_file_uris_are_the_same_local_location(tmp_path):
    plain = Location.of(tmp_path / "lake")
    assert Location.of(f"file://{tmp_path}/lake") == plain == Location.of(str(tmp_path / "lake"))
    assert plain.is_local and plain.atomic_rename and str(plain) == str(tmp_path / "lake")
    assert Path(plain) == tmp_path / "lake"


def test_joining_naming_and_relative_paths_on_an_object_store():
    lake = Location.of("s3://bucket/lake")
    offsets = lake / "checkpoints" / "bronze" / "offsets"
    assert str(offsets) == "s3://bucket/lake/checkpoints/bronze/offsets"
    assert offsets.name == "offsets" and offsets.parent.name == "bronze"
    assert offsets.relative_to(lake) == "checkpoints/bronze/offsets"
    assert Location.of("s3://other/lake/x").relative_to(lake) is None
    assert Location.of("s3://bucket/lakehouse").relative_to(lake) is None
    with pytest.raises(TypeError):
        Path(offsets)


@pytest.mark.parametrize("text", ["ftp://host/x", "s3:///no-bucket", "s3://bucket/a/../b"])
def test_unusable_uris_are_refused_with_the_reason(text):
    with pytest.raises(UnsupportedLocationError) as raised:
        Location.of(text)
    assert text in str(raised.value) and "\n" not in str(raised.value)


def _root(uri: str) -> StoreRoot:
    return Location.of(uri).root


def test_s3_options_from_keys_endpoint_and_allow_http_match_delta_rs_keys():
    env = {
        "AWS_ACCESS_KEY_ID": "AKID",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_SESSION_TOKEN": "token",
        "AWS_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ALLOW_HTTP": "true",
    }
    options = store_options(_root("s3://bucket/lake"), env)
    delta = options.delta_storage_options()
    assert {k: delta[k] for k in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")} == {
        "aws_access_key_id": "AKID",
        "aws_secret_access_key": "secret",
        "aws_session_token": "token",
    }
    assert (delta["aws_region"], delta["aws_endpoint"], delta["allow_http"]) == (
        "eu-west-1",
        "http://127.0.0.1:9000",
        "true",
    )
    assert options.credential_provider is None


def test_s3_service_specific_endpoint_wins_and_https_needs_no_flag():
    env = {
        "AWS_ACCESS_KEY_ID": "a",
        "AWS_SECRET_ACCESS_KEY": "b",
        "AWS_ENDPOINT_URL": "https://generic.example",
        "AWS_ENDPOINT_URL_S3": "https://s3.example",
    }
    options = store_options(_root("s3://bucket"), env)
    assert options.endpoint == "https://s3.example" and not options.allow_http
    assert "allow_http" not in options.delta_storage_options()


def test_s3_credentials_from_an_aws_profile(tmp_path):
    credentials = tmp_path / "credentials"
    credentials.write_text("[ops]\naws_access_key_id = PROFILEKEY\naws_secret_access_key = profilesecret\n")
    config = tmp_path / "config"
    config.write_text("[profile ops]\nregion = ap-south-1\n")
    env = {"AWS_PROFILE": "ops", "AWS_SHARED_CREDENTIALS_FILE": str(credentials), "AWS_CONFIG_FILE": str(config)}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_DEFAULT_REGION"):
            patch.delenv(name, raising=False)
        options = store_options(_root("s3://bucket"), env)
        delta = options.delta_storage_options()
    assert (delta["aws_access_key_id"], delta["aws_secret_access_key"], delta["aws_region"]) == (
        "PROFILEKEY",
        "profilesecret",
        "ap-south-1",
    )


def test_s3_unknown_profile_and_no_credentials_are_one_line_errors(tmp_path):
    empty = {
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("AWS_"):
                patch.delenv(name)
        for name, value in empty.items():
            patch.setenv(name, value)
        with pytest.raises(MissingCredentialsError) as none:
            store_options(_root("s3://bucket"), empty)
        patch.setenv("AWS_PROFILE", "nosuch")
        with pytest.raises(MissingCredentialsError) as unknown:
            store_options(_root("s3://bucket"), {**empty, "AWS_PROFILE": "nosuch"})
    assert "AWS_ACCESS_KEY_ID" in str(none.value) and "\n" not in str(none.value)
    assert "nosuch" in str(unknown.value) and "AWS_PROFILE" in str(unknown.value)


def test_azure_account_from_the_abfss_uri_or_the_environment():
    env = {"AZURE_STORAGE_ACCOUNT_KEY": "a2V5"}
    from_uri = store_options(_root("abfss://lakes@prodacct.dfs.core.windows.net/x"), env)
    assert from_uri.config["azure_storage_account_name"] == "prodacct"
    from_env = store_options(_root("az://lakes/x"), {**env, "AZURE_STORAGE_ACCOUNT_NAME": "envacct"})
    assert from_env.delta_storage_options()["azure_storage_account_name"] == "envacct"
    assert not from_env.allow_http


def test_azure_emulator_and_missing_azure_credentials():
    emulator = store_options(
        _root("az://lakes"),
        {
            "AZURE_STORAGE_ACCOUNT_NAME": "devstoreaccount1",
            "AZURE_STORAGE_USE_EMULATOR": "true",
            "AZURITE_BLOB_STORAGE_URL": "http://127.0.0.1:10010",
        },
    )
    assert emulator.allow_http and emulator.endpoint == "http://127.0.0.1:10010/devstoreaccount1"
    assert emulator.delta_storage_options()["azure_storage_use_emulator"] == "true"
    with pytest.raises(MissingCredentialsError) as account:
        store_options(_root("az://lakes"), {"AZURE_STORAGE_ACCOUNT_KEY": "k"})
    assert "AZURE_STORAGE_ACCOUNT_NAME" in str(account.value)
    with pytest.raises(MissingCredentialsError) as credentials:
        store_options(_root("az://lakes"), {"AZURE_STORAGE_ACCOUNT_NAME": "acct"})
    assert "AZURE_STORAGE_ACCOUNT_KEY" in str(credentials.value) and "\n" not in str(credentials.value)


def test_gcs_service_account_file_and_missing_google_credentials(tmp_path, monkeypatch):
    key = tmp_path / "sa.json"
    key.write_text(json.dumps({"type": "service_account"}))
    options = store_options(_root("gs://bucket/lake"), {"GOOGLE_APPLICATION_CREDENTIALS": str(key)})
    assert options.delta_storage_options()["google_application_credentials"] == str(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(MissingCredentialsError) as missing:
        store_options(_root("gs://bucket/lake"), {})
    assert "GOOGLE_APPLICATION_CREDENTIALS" in str(missing.value) and "\n" not in str(missing.value)
