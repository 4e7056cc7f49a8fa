"""Datasets: creation properties and layouts, initializers, compact and linked datasets, resize
(grow and shrink), and a dataset opened for one request."""
