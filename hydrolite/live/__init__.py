"""Live collections: typed, user-facing handles on IR nodes."""
