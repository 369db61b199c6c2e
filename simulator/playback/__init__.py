"""A trace replayed: read, put in time order, decided in pipelines, written out.

``traces`` reads a CSV or an access log into requests (each line checked, its number in every
message; ``streams`` opens plain, gzip and zstd files; ``formats`` reads any log by its format,
time and key: ``logformats``, ``awslogs`` and ``jsonl`` the formats, ``patterns`` the matching,
``times`` the time, ``keying`` the key) → ``scan`` and ``spool`` put a trace of any length in time order in bounded memory →
``pipelines`` send the requests to the server in batches (several in flight on a real server) →
``run`` is the replay itself (:func:`~simulator.playback.run.replay` for a frame,
``replay_requests`` for a stream) → ``lines`` and ``output`` write each decision as a CSV row.
"""
