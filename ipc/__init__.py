"""The wire side of memoryd: the line protocol, the threaded server, the Python client."""
