"""memoryd: a local daemon that keeps AI coding agents' memory folders indexed.

The public surface: :class:`Client` and the exceptions of :mod:`memoryd.errors`.
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
