"""The routes of the HTTP edge, one module per family of resources."""
