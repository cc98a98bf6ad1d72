"""The long-running process: claim the socket, watch, index through one writer, serve.

Start it with ``memoryd serve`` (or :class:`memoryd.daemon.app.Daemon`); the
modules here are internal to it. Nothing is imported eagerly, so importing
``memoryd.daemon.systemd`` stays cheap.
"""
