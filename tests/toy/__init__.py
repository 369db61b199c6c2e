"""The toy algorithm: an algorithm added exactly as CONTRIBUTING.md says, kept with the tests.

``toy.lua`` is its script, ``algorithm.py`` its module, and importing ``toy.registered`` does
what the one registry line does. ``SIMULATOR_ALGORITHMS=toy.registered`` (with ``tests/`` on
``PYTHONPATH``) imports it when the registry is made, in the test run and in every command it
starts; ``tests/algorithms/test_toy.py`` runs the registry-driven tests over it that way.
"""
