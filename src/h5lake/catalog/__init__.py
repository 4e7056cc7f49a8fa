"""How writes are recorded: the catalogs of a domain's objects and of each dataset's chunks, write
intents, the heartbeats of live writers, and what a dataset's chunks add up to."""
