"""The chunk engine: codecs, cache and bounded chunk I/O."""
