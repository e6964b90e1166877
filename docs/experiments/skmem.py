"""The client's socket memory during a kernel run, from `ss`: how much each subflow holds in
its own receive queue and how much the MPTCP connection holds, against their buffers.

    # while `mpsched emulate ... --out DIR` runs (the client's namespace ends in -c):
    ns=$(ip netns list | grep -- -c | awk '{print $1}'); while sleep 0.02; do
        ip netns exec $ns ss -tmiMH | grep -oE "^(tcp|mptcp)|skmem:\\([^)]*\\)|10\\.10\\.[01]\\.2" |
        tr '\\n' ' '; echo; done > DIR/ss.log
    python docs/experiments/skmem.py DIR/ss.log

Per socket (Wi-Fi's subflow 10.10.0.2, LTE's 10.10.1.2, the connection): `r` (its
`sk_rmem_alloc`, bytes of memory) at the 10th, 50th and 90th percentile and at most, its
buffer `rb`, and the share of samples with `r` above 0 and above `rb`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

NAMES = {"tcp10.10.0": "wifi", "tcp10.10.1": "lte", "mptcp10.10.0": "connection"}


def main() -> None:
    rows = []
    for line in Path(sys.argv[1]).read_text().splitlines():
        found = re.findall(r"(tcp|mptcp) (10\.10\.[01])\.2 skmem:\(r(\d+),rb(\d+)", line)
        sample = {NAMES[k + ip]: (int(r), int(rb)) for k, ip, r, rb in found if k + ip in NAMES}
        if len(sample) == len(NAMES):
            rows.append(sample)
    print(f"{len(rows)} samples")
    for name in NAMES.values():
        r = np.array([s[name][0] for s in rows])
        rb = np.array([s[name][1] for s in rows])
        p10, p50, p90 = np.percentile(r, [10, 50, 90]).astype(int)
        print(
            f"{name:10} r p10 {p10:7} p50 {p50:7} p90 {p90:7} max {r.max():7} | rb "
            f"{rb.min()}-{rb.max()} | r > 0 in {(r > 0).mean():.0%}, "
            f"r > rb in {(r > rb).mean():.0%}"
        )


if __name__ == "__main__":
    main()
