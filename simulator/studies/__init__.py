"""Studies: questions answered with many runs, each returning frames (they never draw).

- :mod:`~simulator.studies.accuracy`: how often the approximations decide differently from the
  exact log, per traffic family (:mod:`~simulator.studies.families`).
- :mod:`~simulator.studies.adversary`: the worst schedules a search can find.
- :mod:`~simulator.studies.memory`: bytes per user at 5 million users on a real server.
- :mod:`~simulator.studies.queue_budget`, :mod:`~simulator.studies.queue_studies`,
  :mod:`~simulator.studies.telemetry`: EchoMQ's budget at a queue's dequeue point.
"""
