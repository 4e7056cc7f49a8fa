"""The web view's and h5grove's use cases: browsing by path and previews reduced to screen size.
Read-only."""
