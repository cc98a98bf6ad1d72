"""The exceptions memoryd raises, in one place.

Every expected failure is a subclass of :class:`MemorydError`, so callers can
catch one type and print ``str(exc)``; anything else is a bug::

    MemorydError
    ├── ConfigError              bad config file, flag or environment value
    ├── StoreError               the SQLite index cannot be opened or written
    ├── DirectoryError           a memory directory is missing or not a directory
    ├── DaemonError              the daemon cannot start
    │   ├── AlreadyRunning       another daemon holds the pidfile / answers the socket
    │   └── UnsafeRuntimeDir     the socket directory is not ours or is writable by others
    ├── DaemonUnavailable        no daemon took the request: nothing was sent (client side)
    │   └── UnsafeDaemon         the socket's listener runs as another uid (client side)
    ├── NoReply                  the request was sent but no answer came back (client side)
    │   └── DaemonTimeout        ... within the client's timeout
    ├── ProtocolError            the answer is not a reply to the request (client side)
    └── RequestError             a request was refused or failed, with a protocol code
        ├── ParseError           code "parse_error"
        ├── InvalidRequest       code "invalid_request"
        ├── UnknownMethod        code "unknown_method"
        ├── InvalidParams        code "invalid_params"
        ├── NotFound             code "not_found"
        ├── NotRegularFile       code "not_a_file": a FIFO, directory, device or link there
        ├── Unwritable           code "unwritable": the disk is full, read-only, or refuses us
        ├── IndexUnavailable     code "index_unavailable": the index is being rebuilt; retry
        ├── Busy                 code "busy": at the connection or thread limit; retry
        └── InternalError        code "internal"

A ``RequestError`` is raised where a request is answered: by the daemon's
server and handlers (and sent as the error object), and by the client, which
raises the daemon's error object again as the class for its code, so the name
says what it is, not where it was raised.

The client-side split matters to callers that retry: only after
``DaemonUnavailable`` is it safe to send a request again (to a daemon the CLI
started), because after ``NoReply`` the daemon may have done it already (a
save written, a selection recorded).

``RequestError`` subclasses mirror the protocol's stable string codes (see
``docs/protocol.md``); :func:`remote_error` maps a daemon's code back to its class.
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
