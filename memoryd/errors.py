"""The exceptions memoryd raises: every expected failure is a :class:`MemorydError`.

:class:`RequestError` subclasses mirror the protocol's error codes (docs/protocol.md): the
daemon sends an error object for one, and the client raises it again as the class for its
code (:func:`remote_error`). Only after :class:`DaemonUnavailable` may a client resend a
request; after :class:`NoReply` the daemon may have done it already.
"""

from __future__ import annotations

from typing import Any


class MemorydError(Exception):
    """Base class of every expected memoryd failure."""


class ConfigError(MemorydError):
    """A configuration file, flag or environment variable is invalid."""


class StoreError(MemorydError):
    """The index database cannot be opened, migrated or written."""


class DirectoryError(MemorydError):
    """A memory directory is missing, not a directory, or unreadable."""


class DaemonError(MemorydError):
    """The daemon cannot start or keep running."""


class AlreadyRunning(DaemonError):
    """Another daemon already owns the pidfile or answers on the socket."""


class UnsafeRuntimeDir(DaemonError):
    """The runtime directory is owned by someone else or open to others."""


class DaemonUnavailable(MemorydError):
    """No daemon took the request: the connection failed before a whole request was sent."""


class NoReply(MemorydError):
    """The request reached the daemon, but the connection ended without an answer."""


class DaemonTimeout(NoReply):
    """The request reached the daemon, but no answer came within the client's timeout."""


class ProtocolError(MemorydError):
    """The daemon's answer is not valid JSON, or answers another request id."""


START_HINT = "start one with `memoryd serve` (or `systemctl --user start memoryd`)"
"""What to do about :class:`DaemonUnavailable`, for commands that cannot answer without one."""


class UnsafeDaemon(DaemonUnavailable):
    """Something answers on the socket, but it runs as another user: nothing is sent to it."""


class RequestError(MemorydError):
    """A request was refused or failed; ``code`` is its protocol code, ``data`` the details."""

    code = "internal"

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class ParseError(RequestError):
    code = "parse_error"


class InvalidRequest(RequestError):
    code = "invalid_request"


class UnknownMethod(RequestError):
    code = "unknown_method"


class InvalidParams(RequestError):
    code = "invalid_params"


class NotFound(RequestError):
    code = "not_found"


class NotRegularFile(RequestError):
    """Something other than a regular file sits where memoryd must read or write one."""

    code = "not_a_file"


class Unwritable(RequestError):
    """A file could not be written: no space, a read-only file system, no permission."""

    code = "unwritable"


class IndexUnavailable(RequestError):
    """The index cannot answer right now (damaged and being rebuilt); the request may be retried."""

    code = "index_unavailable"


class Busy(RequestError):
    """Not now: no room for another connection (limit, threads, descriptors), or a held lock."""

    code = "busy"


class InternalError(RequestError):
    code = "internal"


_BY_CODE = {cls.code: cls for cls in RequestError.__subclasses__()}
"""Each protocol code's class: every subclass of :class:`RequestError` names one."""


def remote_error(code: str, message: str, data: Any = None) -> RequestError:
    """Build the exception for a protocol error code (unknown codes become RequestError)."""
    cls = _BY_CODE.get(code, RequestError)
    err = cls(message, data)
    if cls is RequestError:
        err.code = code
    return err
