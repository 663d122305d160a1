"""pt-tvm."""
