"""Jepsen-style faults on real replicas and a real store (issue 33): pause, partition, clock skew,
kill -9 during a claim, a store outage longer than the lease. ``python -m tests.chaos`` plays
them all and prints the table (``nox -s chaos``); ``test_chaos.py`` keeps one fast case of each
in the default suite. docs/reliability.md, "Chaos", says what each does and counts."""
