"""hydrolite's mypy plugin (the implementation behind `hydrolite.mypy_plugin`)."""
