"""Memory rot: what memories cite, checked against the code as it is now; no memory edited."""
