pytest_plugins = ["hydrolite.sim.pytest_plugin", "pytester"]
