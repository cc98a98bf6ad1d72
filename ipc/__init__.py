"""The wire side of memoryd: protocol framing, the server and the client.

Public surface: :class:`Client` and :data:`PROTOCOL_VERSION`; the server is
the daemon's business.
"""

from memoryd.ipc.client import Client
from memoryd.ipc.protocol import MAX_LINE_BYTES, PROTOCOL_VERSION

__all__ = ["MAX_LINE_BYTES", "PROTOCOL_VERSION", "Client"]
