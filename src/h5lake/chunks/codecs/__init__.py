"""One module per codec family behind the registry in ``chunks.filters``."""
