"""A scheduler in about 20 lines: send on the fastest subflow, and on a slower one only while
the fast one is full and the slow path would still deliver within `max_ratio` x the fastest
RTT (a simple cousin of BLEST and ECF).

    mpsched run --scheduler examples/fastest_first.py:FastestFirst   # from the clone's root
    mpsched run --scheduler fastest_first:FastestFirst               # from this directory
"""


class FastestFirst:
    def __init__(self, max_ratio: float = 3.0) -> None:
        self.max_ratio = max_ratio

    def next(self, ctx):
        dseq = ctx.first_unsent()
        if dseq is None or not ctx.in_window(dseq):
            return None
        ready = [s for s in ctx.subflows if s.established and s.srtt_ns > 0]
        if not ready:
            return None
        fastest = min(ready, key=lambda s: s.srtt_ns)
        if fastest.available:
            return (dseq, fastest.id)
        usable = [s for s in ready if s.available and s.srtt_ns <= self.max_ratio * fastest.srtt_ns]
        if not usable:
            return None  # wait for the fastest subflow
        best = min(usable, key=lambda s: s.srtt_ns)
        ctx.record("slow_sends", best.id)
        return (dseq, best.id)
