"""Import to register every installed library's strategies at once:
``SIMULATOR_ALGORITHMS=simulator.libraries.registered python -m simulator burst``."""

from simulator.libraries import register

#: The names this import added to the registry.
NAMES = register()
