"""The simulation: what to run, the clients, the clock, the run itself.

``scenario`` (frozen values: the limiter's parameters and the clients) → ``traffic`` and
``clients`` (arrivals, as SimPy processes or played ahead as arrays) → ``model`` (one run on one
backend, every decision a row) → ``run`` (:func:`~simulator.engine.run.simulate`: in this process
or split by client into ``shards`` on Dask ``workers``). ``realtime`` says when a run must follow
the wall clock (an algorithm whose window is a key's TTL, on a real server); ``own_keys`` keeps a
run to its own keys on a server the program did not start.
"""
