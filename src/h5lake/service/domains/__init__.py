"""Domains and folders: create, open, list, delete, query, summaries, and reclaiming the storage of
deleted domains and datasets."""
