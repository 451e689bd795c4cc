"""The reference checker (issue 4): a pure-Python oracle for the invariants of reference §11.

`catalogue` (stdlib only, shared with the Spark audit), `checker.check_events` (pure), `reader`
(landing files) and `cli.main` (`replog check`).
"""
