"""Client-side tools (``h5lake load``, ``h5lake export``) that talk to a server over REST."""
