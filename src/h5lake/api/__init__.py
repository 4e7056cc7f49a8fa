"""The HTTP edge: parse requests, authenticate, call use cases, serialize responses."""
