"""memoryd: a local daemon that keeps AI coding agents' memory folders indexed.

The public surface is re-exported here; everything in a module whose name starts
with an underscore, and every submodule not listed below, is private.
"""

from __future__ import annotations

from memoryd.errors import (
    AlreadyRunning,
    ConfigError,
    DaemonError,
    DaemonUnavailable,
    DirectoryError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MemorydError,
    NotFound,
    ParseError,
    RemoteError,
    StoreError,
    UnknownMethod,
    UnsafeRuntimeDir,
)

__version__ = "0.1.0"

__all__ = [
    "AlreadyRunning",
    "ConfigError",
    "DaemonError",
    "DaemonUnavailable",
    "DirectoryError",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "MemorydError",
    "NotFound",
    "ParseError",
    "RemoteError",
    "StoreError",
    "UnknownMethod",
    "UnsafeRuntimeDir",
    "__version__",
]
