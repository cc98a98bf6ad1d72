"""The wire format: newline-delimited JSON, one compact object per line.

A request is ``{"id", "method", "params"}``; its answer ``{"id", "result"}`` or
``{"id", "error": {"code", "message", "data"}}``, errors being data with stable codes.
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Mapping
from typing import Any

from memoryd.errors import InvalidParams, InvalidRequest, ParseError, RequestError
from memoryd.paths import escaped

PROTOCOL_VERSION = 1
MAX_LINE_BYTES = 1024 * 1024
"""Requests longer than this are refused without being read whole."""


# dict[str, Any]: the params as JSON gave them; each method's declaration checks them.
def decode_request(line: bytes) -> tuple[Any, str, dict[str, Any]]:
    """One request line's id, method and params; ParseError or InvalidRequest (with the id
    when known) for anything else."""
    try:
        obj = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ParseError(f"request is not valid JSON: {exc}") from None
    except RecursionError:
        raise InvalidRequest("request is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer over Python's 4,300-digit conversion limit
        raise InvalidRequest(f"request holds a value that cannot be read: {exc}") from None
    if not isinstance(obj, dict):
        raise InvalidRequest("request must be a JSON object")
    req_id = obj.get("id")
    if req_id is not None and (isinstance(req_id, bool) or not isinstance(req_id, str | int)):
        raise InvalidRequest("'id' must be a string or an integer")
    escapes = b"\\u" in line  # only a \u escape can spell a lone surrogate
    if escapes and isinstance(req_id, str) and _lone_surrogate(req_id):
        raise InvalidRequest("'id' holds a lone surrogate: text must be valid Unicode")
    method = obj.get("method")
    if not isinstance(method, str) or not method or (escapes and _lone_surrogate(method)):
        raise InvalidRequest("'method' must be a non-empty string", {"id": req_id})
    params = {} if obj.get("params") is None else obj["params"]
    if not isinstance(params, dict):
        raise InvalidRequest("'params' must be a JSON object", {"id": req_id})
    extra = sorted(set(obj) - {"id", "method", "params"})
    if extra:
        shown = ", ".join(escaped(k) for k in extra)
        raise InvalidRequest(f"unknown request keys: {shown}", {"id": req_id})
    if escapes:
        _check_params_text(params, req_id)
    return req_id, method, params


def _lone_surrogate(text: str) -> bool:
    """True when ``text`` cannot be encoded as UTF-8 (JSON's ``\\ud800`` decodes to one)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


def _check_params_text(params: Mapping[str, object], req_id: Any) -> None:
    """``invalid_params`` naming the field whose key or text holds a lone surrogate."""
    for field, value in params.items():
        stack: list[Any] = [field, value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                if _lone_surrogate(item):
                    name = escaped(field)
                    raise InvalidParams(
                        f"'{name}' holds a lone surrogate: text must be valid Unicode",
                        {"field": name, "id": req_id},
                    )
            elif isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_ASCII_ENCODER = json.JSONEncoder(separators=(",", ":"))


def encode(obj: Mapping[str, object]) -> bytes:
    """One line; text UTF-8 cannot carry (a lone surrogate) goes out as a ``\\u`` escape."""
    text = _ENCODER.encode(obj)
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:
        return _ASCII_ENCODER.encode(obj).encode() + b"\n"


def encode_error(req_id: Any, err: RequestError) -> bytes:
    return encode(
        {"id": req_id, "error": {"code": err.code, "message": err.message, "data": err.data}}
    )


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a connected Unix socket (SO_PEERCRED,
    which the peer cannot forge); None on systems without it."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)
