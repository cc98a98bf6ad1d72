"""memoryd: a local daemon that keeps AI coding agents' memory folders indexed.

The public surface is re-exported here: :class:`Client` (one method per socket
method) and the exception hierarchy drawn in :mod:`memoryd.errors`. Modules
whose names start with an underscore are private; subpackages document their
own public surface (``memoryd.indexer``, ``memoryd.ipc``, ``memoryd.select``,
``memoryd.sessions``, ``memoryd.report``, ``memoryd.integrations``).
"""

from __future__ import annotations

from memoryd.errors import (
    AlreadyRunning,
    ConfigError,
    DaemonError,
    DaemonTimeout,
    DaemonUnavailable,
    DirectoryError,
    IndexUnavailable,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MemorydError,
    NoReply,
    NotFound,
    NotRegularFile,
    ParseError,
    ProtocolError,
    RequestError,
    StoreError,
    UnknownMethod,
    UnsafeDaemon,
    UnsafeRuntimeDir,
    Unwritable,
)
from memoryd.ipc.client import Client

__version__ = "0.1.0"

__all__ = [
    "AlreadyRunning",
    "Client",
    "ConfigError",
    "DaemonError",
    "DaemonTimeout",
    "DaemonUnavailable",
    "DirectoryError",
    "IndexUnavailable",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "MemorydError",
    "NoReply",
    "NotFound",
    "NotRegularFile",
    "ParseError",
    "ProtocolError",
    "RequestError",
    "StoreError",
    "UnknownMethod",
    "UnsafeDaemon",
    "UnsafeRuntimeDir",
    "Unwritable",
    "__version__",
]
