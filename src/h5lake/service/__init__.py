"""Use cases: what each request does, in terms of documents and chunks, never HTTP."""
