"""Which store a URI names: the scheme, bucket or container, and (Azure) the account.

Parsing is separate from I/O so a location can be built, compared and printed without
credentials or network, and so both the storage backends and the lake layout can share it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from streamops.core.storage.errors import UnsupportedLocationError

StoreKind = Literal["file", "s3", "azure", "gcs"]
SCHEMES: dict[str, StoreKind] = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "az": "azure",
    "azure": "azure",
    "abfs": "azure",
    "abfss": "azure",
}
"""URI schemes Spark, delta-rs and the clouds' own tools use for each store."""


@dataclass(frozen=True, order=True)
class StoreRoot:
    """One bucket or container (or the local file system), as the user spelled it."""

    kind: StoreKind
    scheme: str = ""
    authority: str = ""
    """`bucket`, `container` or `container@account.dfs.core.windows.net` as written."""

    @classmethod
    def local(cls) -> StoreRoot:
        return cls("file")

    @classmethod
    def parse(cls, scheme: str, authority: str, original: str) -> StoreRoot:
        kind = SCHEMES.get(scheme.lower())
        if kind is None:
            raise UnsupportedLocationError(
                f"`{original}`: the scheme `{scheme}://` is not supported; use a local path, "
                "file://, s3://, gs://, az:// or abfss://container@account.dfs.core.windows.net/"
            )
        if not authority:
            raise UnsupportedLocationError(
                f"`{original}` names no bucket or container: write {scheme}://<bucket>/<path>"
            )
        return cls(kind, scheme.lower(), authority)

    @property
    def is_local(self) -> bool:
        return self.kind == "file"

    @property
    def container(self) -> str:
        """The bucket (S3, GCS) or container (Azure)."""
        return self.authority.split("@", 1)[0]

    @property
    def account(self) -> str | None:
        """The Azure storage account when the URI names it (`abfss://c@account.dfs...`)."""
        if self.kind != "azure" or "@" not in self.authority:
            return None
        return self.authority.split("@", 1)[1].split(".", 1)[0]

    @property
    def prefix(self) -> str:
        return f"{self.scheme}://{self.authority}"
