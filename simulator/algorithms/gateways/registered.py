"""Import to register every gateway at once:
``SIMULATOR_ALGORITHMS=simulator.algorithms.gateways.registered python -m simulator burst``
prints their rows beside the built-ins' (each configured from ``--limit``, ``--window`` and
``--param``, its own parameters at their defaults)."""

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.gateways import GATEWAYS

#: The names this import added to the registry.
NAMES = [name for name in GATEWAYS if name in ALGORITHMS]
