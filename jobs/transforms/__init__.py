"""Pure DataFrame transforms of the timelines and lag jobs (`DataFrame -> DataFrame`, no I/O).

- `jobs.transforms.timelines`: bronze events -> `silver/replica_offsets`, `silver/partition_state`,
  `silver/isr_changes`, plus the broker settings in force (`broker_settings`, `topic_min_isr`,
  `setting_in_force`) that `partition_state` and the lag transforms look up.
- `jobs.transforms.lag`: bronze + silver -> `silver/follower_lag`, `gold/lag_incidents`,
  `gold/lag_summary`.
- `jobs.transforms.faults` (when each simulated fault ended) and `jobs.transforms.segments` (a running value
  since the last set): shared by these and the audit's scans.

Each function's output has exactly the columns of its table's schema in `schemas.analytics`, so the
jobs write them as they are and the tests compare them with chispa.
"""
