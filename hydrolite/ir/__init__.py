"""The intermediate representation: immutable nodes, ids, metadata and the Flow graph."""
