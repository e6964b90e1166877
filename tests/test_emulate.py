"""The kernel testbed: the link emulator measured with UDP and TCP probes, ``mpsched emulate``
end to end, and clean-up after a run and after an interruption.

These tests need root, network namespaces and TUN devices (and MPTCP for the MPTCP ones); they
skip with the reason where those are missing, unless ``MPSCHED_REQUIRE_TESTBED=1`` (CI): then a
missing root, TUN or namespace fails them (``kernel_testbed.py``).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mpsched import ScenarioError, api, load, to_native
from mpsched.testbed import (
    SERVER_ADDR,
    Testbed,
    calibrate,
    client_addr,
    emulate,
    emulator_command,
    leftovers,
    load_target,
    missing_capabilities,
    netns_inode,
)
from mpsched.testbed.kernel import TestbedError

from .conftest import ROOT, ctrl_c_reaches, run_subprocess
from .kernel_testbed import MISSING as _MISSING
from .kernel_testbed import needs_testbed
from .tshark import needs_tshark, packets

_MISSING_MPTCP = _MISSING or missing_capabilities("mptcp")
needs_mptcp = pytest.mark.skipif(
    _MISSING_MPTCP is not None, reason=f"kernel MPTCP testbed unavailable: {_MISSING_MPTCP}"
)

# A UDP probe tool run inside the namespaces. Every datagram starts with its sequence number
# and its send time (CLOCK_MONOTONIC, which every namespace shares).
PROBE = r"""
import json, os, socket, struct, sys, time
HDR = struct.Struct("!IQ")

def udp(bind):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE
    s.setsockopt(socket.SOL_SOCKET, 32, 16 << 20)  # SO_SNDBUFFORCE
    s.bind(bind)
    return s

# Real-time priority, below the emulator's: the probes measure the path, not the wake-up
# latency of a sleeping process on a busy machine.
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(5))
except (OSError, AttributeError):
    pass

def wait_until(t):
    while time.monotonic_ns() < t:
        pass

mode, args = sys.argv[1], sys.argv[2:]
if mode == "sink":  # ADDR PORT COUNT WAIT_S IDLE_S: receive, report (seq, sent, received, len)
    s = udp((args[0], int(args[1])))
    count, wait, idle = int(args[2]), float(args[3]), float(args[4])
    print(json.dumps({"ready": True}), flush=True)
    got = []
    s.settimeout(wait)
    while len(got) < count:
        try:
            data = s.recv(65535)
        except socket.timeout:
            break
        t = time.monotonic_ns()
        seq, sent = HDR.unpack_from(data)
        got.append((seq, sent, t, len(data)))
        s.settimeout(idle)
    print(json.dumps(got), flush=True)
elif mode == "source":  # BIND DST PORT COUNT PAYLOAD GAP_US
    s = udp((args[0], 0))
    dst, count, size, gap = (args[1], int(args[2])), int(args[3]), int(args[4]), int(args[5])
    buf = bytearray(size)
    start = time.monotonic_ns()
    for i in range(count):
        if gap:
            wait_until(start + i * gap * 1000)
        HDR.pack_into(buf, 0, i, time.monotonic_ns())
        s.sendto(buf, dst)
    print(json.dumps({"sent": count}), flush=True)
elif mode == "burst":  # BIND DST PORT COUNT PAYLOAD BATCH: sendmmsg(2), BATCH datagrams a call
    import ctypes
    s = udp((args[0], 0))
    s.connect((args[1], int(args[2])))
    count, size, batch = int(args[3]), int(args[4]), int(args[5])

    class IoVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    class MsgHdr(ctypes.Structure):
        _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                    ("iov", ctypes.POINTER(IoVec)), ("iovlen", ctypes.c_size_t),
                    ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                    ("flags", ctypes.c_int)]

    class MMsgHdr(ctypes.Structure):
        _fields_ = [("hdr", MsgHdr), ("len", ctypes.c_uint)]

    libc = ctypes.CDLL(None, use_errno=True)
    bufs = [ctypes.create_string_buffer(size) for _ in range(batch)]
    iovs = (IoVec * batch)(*[IoVec(ctypes.cast(b, ctypes.c_void_p), size) for b in bufs])
    msgs = (MMsgHdr * batch)()
    for j in range(batch):
        msgs[j].hdr.iov = ctypes.pointer(iovs[j])
        msgs[j].hdr.iovlen = 1
    sent = 0
    while sent < count:
        n = min(batch, count - sent)
        for j in range(n):
            HDR.pack_into(bufs[j], 0, sent + j, time.monotonic_ns())
        done = 0
        while done < n:
            r = libc.sendmmsg(s.fileno(), ctypes.byref(msgs, done * ctypes.sizeof(MMsgHdr)),
                              n - done, 0)
            if r < 0:
                raise OSError(ctypes.get_errno(), "sendmmsg")
            done += r
        sent += n
    print(json.dumps({"sent": sent}), flush=True)
elif mode == "icmp":  # BIND DST COUNT GAP_MS: ICMP echo round-trip times in ns (as ping)
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.bind((args[0], 0))
    s.settimeout(5)
    dst, count, gap = args[1], int(args[2]), float(args[3])
    rtts = []
    for i in range(count):
        body = struct.pack("!HHHH", 8 << 8, 0, 0x6d70, i) + bytes(56)  # 84-byte IP packet
        words = sum(struct.unpack("!%dH" % (len(body) // 2), body))
        while words >> 16:
            words = (words & 0xFFFF) + (words >> 16)
        body = body[:2] + struct.pack("!H", ~words & 0xFFFF) + body[4:]
        t = time.monotonic_ns()
        s.sendto(body, (dst, 0))
        while True:
            reply = s.recv(65535)
            kind, _, _, ident, seq = struct.unpack_from("!BBHHH", reply, 20)
            if kind == 0 and ident == 0x6d70 and seq == i:
                break
        rtts.append(time.monotonic_ns() - t)
        time.sleep(gap / 1000)
    print(json.dumps(rtts), flush=True)
"""

PATH_TOML = """
duration = "60s"
[connection]
protocol = "tcp"
congestion = "cubic"
[[path]]
name = "p"
{path}
"""


ONE_PATH = 'rate = "30Mbps"\nrtt = "40ms"'


def _scenario(path: str, **overrides: Any) -> dict[str, Any]:
    return to_native(load(PATH_TOML.format(path=path), overrides))


@contextmanager
def bed_for(path: str, **overrides: Any) -> Iterator[Testbed]:
    bed = Testbed(_scenario(path, **overrides))
    with bed:
        yield bed
    assert leftovers(bed.run_id, bed.netns_inodes) == []


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("probe") / "probe.py"
    path.write_text(PROBE)
    return path


def _json_line(proc: subprocess.Popen[str], timeout: float = 20.0) -> Any:
    assert proc.stdout is not None
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if line.startswith(("{", "[")):
            return json.loads(line)
        if not line and proc.poll() is not None:
            break
    stderr = proc.stderr.read() if proc.stderr else ""
    raise AssertionError(f"probe gave no result: {stderr}")


def one_way(
    bed: Testbed,
    probe: Path,
    *,
    count: int,
    payload: int,
    gap_us: int = 0,
    batch: int = 0,
    wait_s: float = 5.0,
    idle_s: float = 1.0,
) -> list[tuple[int, int, int, int]]:
    """Datagrams from the server to the client (the down link): (seq, sent, received, len).
    With ``batch``, the source puts them on the device as fast as ``sendmmsg`` does, ``batch``
    a call; otherwise one ``sendto`` every ``gap_us``."""
    port = 7000
    sink = bed.spawn(
        bed.client_ns,
        [sys.executable, str(probe), "sink", client_addr(0), str(port), str(count), str(wait_s),
         str(idle_s)],
    )  # fmt: skip
    assert _json_line(sink)["ready"]
    mode, pace = ("burst", batch) if batch else ("source", gap_us)
    source = bed.spawn(
        bed.server_ns,
        [sys.executable, str(probe), mode, SERVER_ADDR, client_addr(0), str(port), str(count),
         str(payload), str(pace)],
    )  # fmt: skip
    assert _json_line(source)["sent"] == count
    return [tuple(x) for x in _json_line(sink, wait_s + 30)]


def ping(bed: Testbed, probe: Path, count: int = 30, gap_ms: float = 20) -> list[float]:
    """Round-trip times (ms) of ICMP echo requests (84-byte IP packets, as ping's) from the
    client to the server, which the server's kernel answers."""
    pinger = bed.spawn(
        bed.client_ns,
        [sys.executable, str(probe), "icmp", client_addr(0), SERVER_ADDR, str(count), str(gap_ms)],
    )
    return [ns / 1e6 for ns in _json_line(pinger, 30)]


def link_stats(bed: Testbed, direction: str = "down") -> dict[str, Any]:
    report = bed.stop_emulator()
    links = [ln for t in report["threads"] for ln in t["links"] if ln["direction"] == direction]
    return links[0]


# --- without the testbed ---


def test_congestion_controls_the_kernel_lacks_are_refused() -> None:
    config = _scenario('rate = "30Mbps"\nrtt = "40ms"', **{"connection.congestion": "lia"})
    with pytest.raises(ScenarioError, match="upstream Linux kernel"):
        emulate(config)


def test_the_kernels_timer_phase_follows_from_one_reading(tmp_path: Path) -> None:
    from mpsched.testbed.kernel import PHASE_PERIOD_TICKS, timer_phase_ns

    # At 1,000.001 s of CLOCK_MONOTONIC jiffies read 7 (250 Hz: 4 ms ticks on multiples of 4 ms).
    listing = tmp_path / "timer_list"
    listing.write_text("Timer List Version: v0.10\nnow at 1000001000000 nsecs\n\njiffies: 7\n")
    # 10 ms later: two ticks on (1,000.004 and 1,000.008), 2 ms into the third.
    assert timer_phase_ns(1_000_011_000_000, 250, listing) == 9 * 4_000_000 + 3_000_000
    # The phase wraps with the wheel's coarsest level.
    later = 1_000_001_000_000 + PHASE_PERIOD_TICKS * 4_000_000
    assert timer_phase_ns(later, 250, listing) == 7 * 4_000_000 + 1_000_000
    # A reading within 0.2 ms of a tick is ambiguous: read again (here, always: none).
    listing.write_text("now at 1000000100000 nsecs\njiffies: 7\n")
    assert timer_phase_ns(1_000_011_000_000, 250, listing) is None


def test_the_testbed_speaks_the_simulators_names() -> None:
    """`linux` is upstream's scheduler on both sides; the out-of-tree `default` and the
    simulator's own schedulers are refused with a hint to `linux`, as is the out-of-tree
    stack."""
    from mpsched.testbed import check_kernel_support

    mptcp = {"connection.protocol": "mptcp"}
    config = _scenario(ONE_PATH, **mptcp, **{"connection.scheduler": "linux"})
    assert check_kernel_support(config, None) == "default"
    for name in ("default", "minrtt"):
        config = _scenario(ONE_PATH, **mptcp, **{"connection.scheduler": name})
        with pytest.raises(ScenarioError, match=r"^connection\.scheduler: .*'linux'"):
            emulate(config)
    config = _scenario(ONE_PATH, **mptcp, **{"connection.stack": "out-of-tree"})
    with pytest.raises(ScenarioError, match=r"^connection\.stack: .*out-of-tree"):
        check_kernel_support(config, None)


def test_the_testbed_summary_prints_as_the_simulators() -> None:
    """A bulk download is a bulk download on both sides: the kernel's null block fields do
    not make it a rate-limited application."""
    import io

    from rich.console import Console

    from mpsched.api import Result
    from mpsched.cli.render import print_summary
    from mpsched.testbed.summary import summarize

    config = _scenario(ONE_PATH, **{"connection.protocol": "mptcp"})
    config["scheduler"] = "linux"
    s = summarize(config, {"bytes_received": 1000}, {}, {}, {}, kernel_scheduler="default",
                  wall_s=1.0)  # fmt: skip
    assert s["scheduler"] == "linux" and s["block_delay_ms"] is None
    out = io.StringIO()
    print_summary(Result(summary=s, scenario=config), Console(file=out, width=200))
    assert "(bulk transfer)" in out.getvalue() and "rate-limited" not in out.getvalue()
    assert "scheduler linux" in out.getvalue() and "on the kernel" in out.getvalue()


def test_unknown_kernel_scheduler_is_refused() -> None:
    config = _scenario('rate = "30Mbps"\nrtt = "40ms"', **{"connection.protocol": "mptcp"})
    with pytest.raises(ScenarioError, match=r"net\.mptcp\.available_schedulers"):
        emulate(config, kernel_scheduler="no-such-scheduler")


# --- the link emulator, measured ---


def test_the_emulator_comes_with_the_package(tmp_path: Path) -> None:
    """No source tree or toolchain needed: the native module runs it; a bad configuration is
    refused with a message and exit code 2, as the binary refuses it."""
    bad = tmp_path / "emu.json"
    bad.write_text("{}")
    proc = subprocess.run(
        [*emulator_command(), str(bad)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2, proc.stderr
    assert "mpsched-emu: emulator config" in proc.stderr


@needs_testbed
def test_ping_sees_the_configured_rtt(probe: Path) -> None:
    # Acceptance 1: ping-style probes see the configured RTT within 1 ms. An 84-byte ICMP
    # echo adds 2 x 22.4 us of serialization at 30 Mbit/s; beyond that, the probe sees the
    # wake-up latency of the processes involved (the emulator's threads when a packet arrives,
    # the pinger), about 0.1 ms each on a virtual machine that halts its idle CPUs.
    with bed_for('rate = "30Mbps"\nrtt = "40ms"') as bed:
        rtts = ping(bed, probe)
        lateness = bed.stop_emulator()["lateness"]
    assert len(rtts) == 30
    assert min(rtts) >= 40.04, rtts
    assert statistics.median(rtts) - 40.0 < 0.7, rtts
    assert statistics.quantiles(rtts, n=10)[-1] - 40.0 < 1.0, rtts
    assert lateness["p50_us"] < 100 and lateness["count"] == 60, lateness


@needs_testbed
def test_one_way_delays_per_direction(probe: Path) -> None:
    with bed_for('rate = "30Mbps"\ndelay_down = "25ms"\ndelay_up = "5ms"') as bed:
        got = one_way(bed, probe, count=20, payload=1000, gap_us=10_000)
        rtts = ping(bed, probe, count=10)
    delays = [(recv - sent) / 1e6 for _, sent, recv, _ in got]
    # 1028 bytes on the wire at 30 Mbit/s: 274 us.
    assert 25.27 <= statistics.median(delays) < 25.27 + 0.4, delays
    assert 30.04 <= statistics.median(rtts) < 30.04 + 0.7, rtts


@needs_testbed
def test_rate_is_the_configured_rate(probe: Path) -> None:
    # A burst of 1500-byte IP packets leaves the link every 400 us at 30 Mbit/s.
    with bed_for('rate = "30Mbps"\nrtt = "10ms"\nqueue = "5000pkt"') as bed:
        got = one_way(bed, probe, count=1500, payload=1472)
        stats = link_stats(bed)
    assert len(got) == 1500 and stats["queue_drops"] == 0
    assert {length for *_, length in got} == {1472}
    # From the 50th packet on: the sink's first wake-up is late, then it catches up.
    first, last = got[50][2], got[-1][2]
    rate = (len(got) - 51) * 1500 * 8 / ((last - first) / 1e9)
    assert abs(rate / 30e6 - 1) < 0.002, rate
    lateness = stats["lateness"]
    assert lateness["p99_us"] < 1000, lateness


@needs_testbed
@pytest.mark.parametrize("queue", ["10pkt", "15000B", "120ms"])
def test_drop_tail_queue_limit(probe: Path, queue: str) -> None:
    # At 1 Mbit/s a 1500-byte packet takes 12 ms; a burst of 40 arrives within a few ms, so a
    # queue of 10 packets (or 15,000 bytes, or 120 ms at the rate) takes exactly 10 of them.
    with bed_for(f'rate = "1Mbps"\nrtt = "2ms"\nqueue = "{queue}"') as bed:
        got = one_way(bed, probe, count=40, payload=1472, idle_s=0.5)
        stats = link_stats(bed)
    assert len(got) in (10, 11), len(got)  # 11 if the burst outlasted one serialization
    assert stats["queue_drops"] == 40 - len(got)
    assert [seq for seq, *_ in got] == list(range(len(got)))


@needs_testbed
def test_a_burst_reaches_the_link_whole(probe: Path) -> None:
    # A scenario's only queue is its link's: 8,000 datagrams put on the server's device in
    # calls of 1,000 (sendmmsg) all reach a link whose queue holds them. The TUN device's
    # ring between the kernel and the emulator, 500 packets by default, dropped the tail of
    # such bursts without a word to the sender, as it did a TCP burst of 645 segments
    # (netns.TUN_TXQUEUELEN); its drops are the devices' tx_dropped, in every summary.
    with bed_for('rate = "100Mbps"\nrtt = "2ms"\nqueue = "100000pkt"') as bed:
        got = one_way(bed, probe, count=8000, payload=1400, batch=1000)
        host = bed.device_drops()
        stats = link_stats(bed)
    assert host == {"server": [0], "client": [0]}, host
    assert stats["enqueued"] == 8000 and stats["queue_drops"] == 0, stats
    assert sorted(seq for seq, *_ in got) == list(range(8000))


@needs_testbed
def test_random_loss_rate(probe: Path) -> None:
    with bed_for('rate = "100Mbps"\nrtt = "2ms"\nqueue = "10000pkt"\nloss = 0.1') as bed:
        got = one_way(bed, probe, count=3000, payload=200, idle_s=0.5)
        stats = link_stats(bed)
    lost = 3000 - len(got)
    assert lost == stats["random_drops"] and stats["queue_drops"] == 0
    assert abs(lost / 3000 - 0.1) < 0.02, lost


@needs_testbed
def test_schedule_changes_the_delay_at_its_time(probe: Path) -> None:
    path = 'rate = "30Mbps"\ndelay_down = "10ms"\ndelay_up = "10ms"\n'
    path += '[[path.schedule]]\nat = "1s"\ndelay_down = "30ms"'
    with bed_for(path) as bed:
        epoch = time.monotonic_ns()
        bed.set_epoch(epoch)
        got = one_way(bed, probe, count=100, payload=100, gap_us=20_000)
        stats = link_stats(bed)
    assert stats["changes_applied"] == 1
    early = [(r - s) / 1e6 for _, s, r, _ in got if s < epoch + 0.95e9]
    late = [(r - s) / 1e6 for _, s, r, _ in got if s > epoch + 1.05e9]
    assert early and late
    # A host can only add delay (as in test_one_way_delays_per_direction); the change itself
    # is 20 ms whatever the host adds.
    before, after = statistics.median(early), statistics.median(late)
    assert 10.0 <= before < 10.03 + 0.4, early
    assert 30.0 <= after < 30.03 + 0.4, late
    assert abs(after - before - 20.0) < 0.3, (before, after)


@needs_testbed
def test_an_outage_loses_every_datagram_while_the_path_is_down(probe: Path) -> None:
    """`state = "down"` in a path's schedule: the emulated link loses what it holds and all
    it is offered until `state = "up"`; before and after, everything arrives."""
    path = 'rate = "30Mbps"\nrtt = "20ms"\n'
    path += '[[path.schedule]]\nat = "1s"\nstate = "down"\n'
    path += '[[path.schedule]]\nat = "2s"\nstate = "up"'
    with bed_for(path) as bed:
        epoch = time.monotonic_ns()
        bed.set_epoch(epoch)
        # The receiver waits out the silent second (idle_s).
        got = one_way(bed, probe, count=150, payload=100, gap_us=20_000, idle_s=3.0)
        stats = link_stats(bed)
    assert stats["changes_applied"] == 2
    sent_at = {seq: s for seq, s, _, _ in got}
    received = set(sent_at)
    # 150 datagrams 20 ms apart from the epoch-ish start: those sent while down are gone.
    seqs = range(150)
    assert len(received) < 150
    lost = [q for q in seqs if q not in received]
    assert stats["outage_drops"] == len(lost)
    assert len(lost) > 40, lost
    # Every datagram that arrived was sent outside the outage (10 ms one way, plus slack).
    for seq, s, _, _ in got:
        t = (s - epoch) / 1e9
        assert not (1.0 + 0.002 < t < 2.0 - 0.012), (seq, t)


# --- the kernel over the emulator ---


@needs_testbed
def test_plain_tcp_reaches_the_payload_rate() -> None:
    # Acceptance 1: plain TCP through one emulated 30 Mbit/s, 40 ms path reaches >= 95% of the
    # payload rate (1448 payload bytes in every 1500-byte packet: 28.96 Mbit/s).
    config = _scenario('rate = "30Mbps"\nrtt = "40ms"\nqueue = "40ms"', duration="8s")
    payload_rate = 30e6 * 1448 / 1500 / 1e6
    late = []
    # The emulator's timing is the machine's: a virtual machine that stalls its threads for
    # milliseconds makes one run late (p99 2.4 ms once in a quiet CI run whose goodput was
    # right); a second run decides. Every run must carry the payload rate.
    for _ in range(2):
        summary = emulate(config)
        assert summary["goodput_mbps"] >= 0.95 * payload_rate, summary["goodput_mbps"]
        timeline = summary["timeline"]
        (t0, b0), (t1, b1) = next(x for x in timeline if x[0] >= 2.0), timeline[-1]
        steady = (b1 - b0) * 8 / (t1 - t0) / 1e6
        assert steady >= 0.97 * payload_rate, steady
        (sub,) = summary["subflows"]
        assert sub["kernel"]["mss"] == 1448
        assert 40.0 <= sub["min_rtt_ms"] < 41.0
        assert summary["kernel"]["congestion_in_use"] == ["cubic"]
        late.append(summary["emulator"]["lateness_us"]["p99_us"])
        if late[-1] < 1000:
            break
    assert min(late) < 1000, late


@needs_mptcp
def test_a_backup_path_waits_for_the_regular_one_to_fail_on_the_kernel_too() -> None:
    # The LTE endpoint carries the backup flag: while Wi-Fi works it is idle (the simulator's
    # upstream rule: none regular active); Wi-Fi fails at 3 s and LTE takes over.
    scenario = load(
        ROOT / "scenarios" / "stms-lab.toml",
        {"duration": "7s", "path.lte.backup": True, "connection.scheduler": "linux"},
    )
    config = to_native(scenario)
    config["paths"][0]["schedule"] = [{"at_ns": 3_000_000_000, "up": False}]
    summary = emulate(config)
    samples = summary["timeline"]
    wifi, lte = summary["subflows"]
    assert lte["bytes_delivered"] > 5e6, lte
    # Before the failure: the bytes delivered by then all came over Wi-Fi.
    before = next(b for t, b in samples if t >= 2.9)
    assert wifi["bytes_delivered"] >= 0.99 * before, (wifi["bytes_delivered"], before)


@needs_mptcp
@pytest.mark.parametrize("first", ["lte", "wifi"])
def test_a_gone_address_closes_its_subflow_and_its_return_joins_a_new_one(first: str) -> None:
    # Wi-Fi's endpoint is deleted at 2 s and added back at 5 s (`id 0 ADDRESS` when Wi-Fi's
    # address opened the connection): the kernel closes the subflow (its FIN is lost on the
    # dead link), LTE carries on, and the path manager joins a new Wi-Fi subflow at once.
    order = ["lte", "wifi"] if first == "lte" else ["wifi", "lte"]
    scenario = load(
        ROOT / "scenarios" / "stms-lab.toml",
        {"duration": "8s", "connection.paths": order, "connection.scheduler": "linux"},
    )
    config = to_native(scenario)
    wifi_at = order.index("wifi")
    config["paths"][wifi_at]["schedule"] = [
        {"at_ns": 2_000_000_000, "present": False},
        {"at_ns": 5_000_000_000, "up": True, "present": True},
    ]
    summary = emulate(config)
    changes = summary["kernel"]["address_changes"]
    expected = [(wifi_at, False), (wifi_at, True)]
    assert [(c["path"], c["present"]) for c in changes] == expected, changes
    assert all("error" not in c and c["applied_s"] - c["at_s"] < 0.1 for c in changes), changes
    # LTE took over: no stall of a timeout's length.
    assert summary["longest_stall_ms"] < 1000, summary["longest_stall_ms"]
    # The subflow the kernel lists at the end on Wi-Fi is the new one: it carried the last 3 s.
    wifi = next(s for s in summary["subflows"] if s["name"] == "wifi")
    assert wifi["bytes_sent"] > 5e6, wifi


@needs_testbed
def test_a_lost_syn_goes_again_after_a_second_on_the_kernel_as_in_the_model() -> None:
    # The path is down when the SYN leaves and back at 0.5 s: Linux sends it again after
    # TCP_TIMEOUT_INIT (1 s; the timer wheel adds up to 32 ms at HZ = 250), the model too.
    raw = (
        'duration = "6s"\n[connection]\nprotocol = "tcp"\n[workload]\nkind = "file"\n'
        'size = "100KB"\n[[path]]\nname = "p"\nrate = "10Mbps"\nrtt = "50ms"\n'
        'queue = "50ms"\n[[path.schedule]]\nat = "0s"\nstate = "down"\n'
        '[[path.schedule]]\nat = "0.5s"\nstate = "up"\n'
    )
    kernel = emulate(load(raw))
    model = api.run(load(raw)).summary
    assert 1.05 <= kernel["kernel"]["connected_s"] < 1.1, kernel["kernel"]["connected_s"]
    assert 1.2 < model["completion_s"] < 1.3, model["completion_s"]
    assert abs(kernel["completion_s"] / model["completion_s"] - 1) < 0.05, (kernel, model)


@needs_mptcp
def test_a_subflow_joining_after_the_buffer_stopped_growing_keeps_its_own_small_buffer() -> None:
    # Upstream MPTCP subflows are sockets with receive buffers of their own. At 512 KiB the
    # connection's buffer reaches tcp_rmem[2] on its first reads, before the LTE subflow
    # joins; the subflows follow the connection only while it grows, so LTE keeps 128 KiB
    # and its rcv_ssthresh stops at win(131,072) = 80,896 (less what it holds), while Wi-Fi's
    # grows toward the connection's 323,584. No random loss: out-of-order data at LTE would
    # grow its buffer too.
    overrides = {
        "duration": "4s",
        "connection.scheduler": "linux",
        "connection.rcvbuf": "512KiB",
        "path.lte.rtt": "100ms",
        "path.lte.loss": 0.0,
        "path.wifi.loss": 0.0,
    }
    scenario = load(ROOT / "scenarios" / "stms-lab.toml", overrides)
    summary = emulate(to_native(scenario))
    wifi, lte = (s["kernel"]["receiver_rcv_ssthresh"] for s in summary["subflows"])
    assert 79_000 <= lte <= 80_896, lte
    assert wifi > 250_000, wifi
    # The model: LTE's own buffer stays at tcp_rmem[1], Wi-Fi's follows the connection's.
    model = api.run(load(ROOT / "scenarios" / "stms-lab.toml", overrides), trace=True)
    last = model.table("subflows").to_pandas().groupby("subflow").last()
    assert last.loc[1, "rcvbuf_bytes"] == 131_072, last
    assert last.loc[0, "rcvbuf_bytes"] > 400_000, last


def test_a_sampling_period_under_a_millisecond_is_refused() -> None:
    outcome = run_subprocess("emulate", "--sample-interval", "500us")
    assert outcome.code != 0
    assert "--sample-interval: must be at least 1ms, got '500us'" in outcome.err
    with pytest.raises(TestbedError, match="at least 1 ms"):
        emulate(to_native(load(ROOT / "scenarios" / "stms-lab.toml")), sample_ns=999_999)


@needs_mptcp
def test_the_receiver_rtt_both_sides_report_lies_between_a_path_s_rtt_and_its_full_queue(
    tmp_path: Path,
) -> None:
    # The client samples each subflow's receiving state every 100 ms (raw/client.json
    # "samples": TCP_INFO's rcv_rtt, rcv_space, ...), the model traces its receiver RTT
    # estimate (subflows.rcv_rtt_ns). A receiver's RTT runs from its ACK to data echoing it:
    # never less than the path's RTT, and mostly within that plus the full queue (data a
    # Data ACK on the other path releases echoes an older ACK: a sample can be longer). A
    # misread TCP_INFO offset or a subflow mapped to the wrong path falls out.
    overrides = {"duration": "3s", "connection.scheduler": "linux", "path.lte.rtt": "200ms"}
    scenario = load(ROOT / "scenarios" / "stms-lab.toml", overrides)
    # Sampled every 20 ms (`--sample-interval`) rather than every 100 ms.
    emulate(to_native(scenario), raw_dir=tmp_path / "raw", sample_ns=20_000_000)
    client = json.loads((tmp_path / "raw" / "client.json").read_text())
    server = json.loads((tmp_path / "raw" / "server.json").read_text())
    for side in (client, server):
        times = [t for t, *_ in side["samples"]]
        assert len(times) >= 100, len(times)
        assert 0.015 <= statistics.median(b - a for a, b in itertools.pairwise(times)) <= 0.025
    bounds = {client_addr(0): (20.0, 20.0 + 50.0 + 1.0), client_addr(1): (200.0, 700.0 + 1.0)}
    seen: dict[str, list[float]] = {addr: [] for addr in bounds}
    for t, rows, (rcvbuf, inq) in client["samples"]:
        assert 131_072 <= rcvbuf <= 6 << 20 and inq >= 0, (t, rcvbuf, inq)
        for local, rcv_rtt_us, rcv_space, *_ in rows:
            addr = local.rsplit(":", 1)[0]
            if rcv_rtt_us:
                seen[addr].append(rcv_rtt_us / 1000)
                assert rcv_space > 0, (t, rows)
    for addr, (low, high) in bounds.items():
        assert len(seen[addr]) >= 10, seen
        assert min(seen[addr]) >= low - 1.0, (addr, seen[addr])
        assert statistics.median(seen[addr]) <= high, (addr, seen[addr])
    model = api.run(scenario, trace=True).table("subflows").to_pandas()
    for sf, (low, high) in enumerate(bounds.values()):
        rtt = model[(model.subflow == sf) & (model.rcv_rtt_ns > 0)].rcv_rtt_ns / 1e6
        assert len(rtt) >= 100, rtt.describe()
        assert rtt.min() >= low and rtt.median() <= high, (sf, rtt.describe())


@needs_mptcp
def test_mptcp_run_has_the_simulator_summary_keys() -> None:
    config = to_native(load(ROOT / "scenarios" / "stms-lab.toml", {"duration": "4s"}))
    config["scheduler"] = "linux"
    summary = emulate(config)
    simulated = api.run(
        ROOT / "scenarios" / "stms-lab.toml", duration="4s", **{"connection.scheduler": "linux"}
    ).summary
    assert set(simulated) <= set(summary)
    assert set(simulated["subflows"][0]) <= set(summary["subflows"][0])
    assert [s["name"] for s in summary["subflows"]] == ["wifi", "lte"]
    assert summary["kernel"]["subflows_established"] == 2
    for sub in summary["subflows"]:
        assert sub["bytes_delivered"] > 1e6 and sub["packets_sent"] > 1000
        assert sub["srtt_ms"] is not None and sub["cwnd_segments"] > 0
    assert summary["goodput_mbps"] > 35
    # One vocabulary: the simulator's name for upstream's scheduler, the sysctl's beside it.
    assert summary["scheduler"] == "linux"
    assert summary["kernel"]["scheduler"] == "default"


@needs_mptcp
@needs_tshark
def test_the_kernels_packets_as_pcapng(tmp_path: Path) -> None:
    """--trace-headers also writes the kernels' packets as pcapng: every packet that entered a
    link, and the data sequence numbers tshark decodes from the kernel's DSS options are those
    the emulator's own parser read (raw/data.parquet), packet for packet."""
    import pandas as pd

    config = to_native(load(ROOT / "scenarios" / "stms-lab.toml", {"duration": "3s"}))
    config["scheduler"] = "linux"
    capture = tmp_path / "capture.pcapng"
    emulate(config, raw_dir=tmp_path / "raw", header_trace=True, pcap=capture)
    report = json.loads((tmp_path / "raw" / "emulator.json").read_text())
    frame = packets(
        capture,
        {"name": "frame.interface_name", "len": "tcp.len", "dsn": "mptcp.dsn", "tcp": "tcp.stream"},
    )
    entered = {
        f"{link['name']} {link['direction']}": link["enqueued"]
        + link["queue_drops"]
        + link["random_drops"]
        for thread in report["threads"]
        for link in thread["links"]
    }
    assert frame.groupby("name").size().to_dict() == entered
    assert report["pcap_packets"] == sum(entered.values())
    # One MPTCP connection, a TCP subflow on each path.
    streams = frame.dropna(subset=["dsn"]).groupby("name").tcp.unique()
    assert sorted(len(s) for s in streams) == [1, 1, 1, 1]
    data = frame[(frame.len > 0) & frame.name.str.endswith("down")].dropna(subset=["dsn"])
    assert len(data) > 10_000
    decoded = sorted(
        zip(data.name.str.split().str[0], data.t_ns, data.dsn.astype("int64") - 1, strict=True)
    )
    parsed = pd.read_parquet(tmp_path / "raw" / "data.parquet")
    ours = sorted(zip(parsed.path, parsed.t_ns, parsed.dsn_bytes, strict=True))
    assert decoded == ours


# --- nothing left behind ---


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return {line.split()[0] for line in out.stdout.splitlines() if line.startswith("mpsemu-")}


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        pid = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("PPid:")))
    return False


def _own_namespaces(pid: int) -> set[str]:
    """The testbed namespaces in which a descendant of ``pid`` runs: the run that process
    started, whatever other runs share the machine."""
    own = set()
    for name in _namespaces():
        out = subprocess.run(
            ["ip", "netns", "pids", name], capture_output=True, text=True, check=False
        )
        if any(_descends_from(int(p), pid) for p in out.stdout.split()):
            own.add(name)
    return own


def _received_bytes(ns: str) -> int:
    """Bytes the devices of namespace ``ns`` (loopback aside) have received."""
    out = subprocess.run(
        ["ip", "-n", ns, "-j", "-s", "link", "show"], capture_output=True, text=True, check=False
    )
    if out.returncode != 0 or not out.stdout.strip():
        return 0
    devices = json.loads(out.stdout)
    return sum(d["stats64"]["rx"]["bytes"] for d in devices if d.get("ifname") != "lo")


@needs_mptcp
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_run_leaves_nothing_behind(sig: signal.Signals) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpsched", "emulate", str(ROOT / "scenarios" / "stms-lab.toml"),
         "--set", "duration=30s", "--set", "connection.scheduler=linux"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_reaches,  # noqa: PLW1509
    )  # fmt: skip
    try:
        end = time.monotonic() + 20
        # Its own namespaces (each holds one of its load generators), not another run's that
        # shares the machine.
        while len(new := _own_namespaces(proc.pid)) < 2 and time.monotonic() < end:
            time.sleep(0.1)
        assert len(new) == 2, new
        run_id = next(iter(new)).split("-")[1]
        inodes = [netns_inode(name) for name in new]

        def processes() -> list[str]:
            alive = leftovers(run_id, [i for i in inodes if i])
            return [x for x in alive if x.startswith("process")]

        # The emulator and both load generators (a loaded machine may take seconds to start
        # them), then into the transfer.
        while len(alive := processes()) < 3 and time.monotonic() < end:
            time.sleep(0.1)
        assert len(alive) >= 3, alive
        # Into the transfer: the client has received a megabyte (a third of a second of the
        # 30 Mbit/s path).
        (client,) = (name for name in new if name.endswith("-c"))
        end = time.monotonic() + 30
        while (got := _received_bytes(client)) < 1_000_000 and time.monotonic() < end:
            time.sleep(0.1)
        assert got >= 1_000_000, f"the transfer has not begun: {got} bytes received"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            # Let it clean up its namespaces before it goes, so that a failure here does not
            # leave them to the tests after it.
            proc.terminate()
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 130, err
    assert "aborted" in err
    assert leftovers(run_id, [i for i in inodes if i]) == []
    assert not {name for name in _namespaces() if name.startswith(f"mpsemu-{run_id}-")}


# --- calibration ---


def test_sweep_files_expand_to_points(tmp_path: Path) -> None:
    sweep = load_target(ROOT / "docs" / "calibration" / "sweep.toml")
    assert len(sweep.points) == 17 and sweep.repetitions == 3
    first = sweep.points[0]
    assert first.overrides == {
        "path.lte.rtt": "20ms",
        "path.wifi.queue": "50ms",
        "path.lte.queue": "50ms",
    }
    assert load_target(ROOT / "scenarios" / "stms-lab.toml").points[0].overrides == {}
    bad = tmp_path / "bad.toml"
    bad.write_text('[sweep]\nscenario = "x.toml"\nrepeats = 2\n')
    with pytest.raises(ScenarioError, match="repeats"):
        load_target(bad)


@needs_mptcp
def test_calibration_report_on_a_small_sweep(tmp_path: Path) -> None:
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(
        f'[sweep]\nscenario = "{ROOT / "scenarios" / "stms-lab.toml"}"\nrepetitions = 1\n'
        'set = { duration = "3s" }\n[[sweep.group]]\nname = "slow RTT"\n'
        'grid = { "path.lte.rtt" = ["20ms", "100ms"] }\n'
    )
    report = calibrate(load_target(sweep_file), tmp_path / "out")
    assert len(report["runs"]) == 4
    assert [row["point"] for row in report["rows"]] == ["lte.rtt=20ms", "lte.rtt=100ms"]
    for row in report["rows"]:
        assert 0.7 < row["ratio"]["mean"] < 1.3, row["ratio"]
        assert set(row["kernel"]["paths"]) == {"wifi", "lte"}
    text = (tmp_path / "out" / "report.md").read_text()
    assert "## slow RTT" in text and "| lte.rtt=100ms |" in text
    assert json.loads((tmp_path / "out" / "report.json").read_text())["meta"]["repetitions"] == 1
