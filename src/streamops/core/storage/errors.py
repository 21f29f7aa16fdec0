"""What can go wrong talking to a store, as errors that say what to do in one line.

Classified from obstore's exception types and from our own checks (is the endpoint accepting
connections, does the container list), never from an error message's text.
"""

from __future__ import annotations

from streamops.core.exceptions import StreamopsError


class StorageError(StreamopsError):
    """A store could not be used for a reason the user must fix (credentials, names, network)."""


class UnsupportedLocationError(StorageError):
    """The text given as a path or URI names no store these tools speak."""


class MissingCredentialsError(StorageError):
    """No credentials were found in the cloud's standard environment and configuration."""


class CredentialsRejectedError(StorageError):
    """The store refused the credentials it was given (unknown key, bad signature, expired)."""


class AccessDeniedError(StorageError):
    """The credentials are valid but may not perform this action on this path."""


class ContainerNotFoundError(StorageError):
    """The bucket or container in the URI does not exist at the endpoint."""


class EndpointUnreachableError(StorageError):
    """Nothing accepts connections at the store's endpoint."""


class ConditionalWriteUnsupportedError(StorageError):
    """The store cannot write a file only if it is absent, which a safe rewrite needs."""
