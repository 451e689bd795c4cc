"""Violations linked by the events they share: one fault's knock-on findings, to be read together.

A lost acknowledged write rarely shows as one violation. In KIP-101's scenario the follower's truncation to
its HW removes a committed record (`truncation_safety`), the other replica later does the same, the new leader
commits other data at that offset (`inconsistent_offsets`) and the end-of-run check finds the acknowledged
write missing (`acked_write_lost`): four errors, one loss. Each names some of the same events (the append,
the HW move that committed it, the truncation), so the report links two violations when their detecting or
evidence events overlap, and shows each connected set as one chain.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


def linked_groups(events: Sequence[Collection[int]]) -> list[list[int]]:
    """The indices of `events` (each item the event ids one violation names) grouped by shared ids: items
    that share an id are in one group, transitively (union-find). Only groups of two or more, each in input
    order, the groups in order of their first index."""
    parent = list(range(len(events)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]  # path halving: the trees stay shallow
            i = parent[i]
        return i

    first_holder: dict[int, int] = {}
    for i, ids in enumerate(events):
        for event_id in ids:
            j = first_holder.setdefault(event_id, i)
            if j != i:
                a, b = root(i), root(j)
                if a != b:
                    parent[max(a, b)] = min(a, b)  # the earlier index stays the root
    groups: dict[int, list[int]] = {}
    for i in range(len(events)):
        groups.setdefault(root(i), []).append(i)
    return [g for _, g in sorted(groups.items()) if len(g) > 1]
