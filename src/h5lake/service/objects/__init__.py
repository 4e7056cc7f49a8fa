"""Groups, datasets and committed datatypes as objects: find, show, create, delete; their
attributes, links, ACLs, and the paths that lead to them."""
