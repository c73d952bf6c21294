"""The GL runtime: the headless EGL context, GL objects, the program cache, buffer views, driver
queries and per-device kernel choices."""
