"""Dataset values: reads, writes, appends and query updates, one use case per request, and what
each asks for and answers."""
