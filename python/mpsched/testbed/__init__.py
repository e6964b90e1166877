"""The kernel testbed (``mpsched emulate``): a scenario on the real Linux kernel over emulated
paths.

The testbed (see ``docs/emulator.md``):

- two network namespaces, ``mpsemu-<id>-c`` (the client, which receives) and ``mpsemu-<id>-s``
  (the server, which sends), ``<id>`` a random run identifier;
- per path ``p`` one TUN device in each, ``me<id>c<p>`` and ``me<id>s<p>``, created by the
  link emulator ``mpsched-emu`` (crates/mpsched-emu), which is the wire between them and applies
  the scenario's links to every packet: the same model as the simulator (rate, delay per
  direction, drop-tail limit, loss, schedules);
- the client has one address per path (``10.10.<p>.2``) with source routing (``ip rule``) onto
  the path's device and an MPTCP ``subflow`` endpoint per address; the server has one address,
  ``10.20.0.1``, so that each client address opens one subflow over its path;
- sysctls per namespace: ``tcp_rmem``/``tcp_wmem`` maxima from the scenario's rcvbuf/sndbuf,
  ``net.mptcp.scheduler``, the congestion control.

The load generator (:mod:`mpsched.testbed.loadgen`) runs in the namespaces; its measurements, the
emulator's link counters and the kernel's ``nstat`` counters make a summary with the keys of
``mpsched run --json`` (fields the kernel cannot tell are ``null``). Everything is removed
afterwards, also on an exception, Ctrl-C or SIGTERM.
"""

from .calibrate import calibrate, load_target
from .kernel import (
    KERNEL_CONGESTION,
    TestbedError,
    check_kernel_support,
    kernel_schedulers,
    missing_capabilities,
)
from .netns import SERVER_ADDR, Testbed, client_addr, emulator_command, leftovers, netns_inode
from .run import emulate

__all__ = [
    "KERNEL_CONGESTION",
    "SERVER_ADDR",
    "Testbed",
    "TestbedError",
    "calibrate",
    "check_kernel_support",
    "client_addr",
    "emulate",
    "emulator_command",
    "kernel_schedulers",
    "leftovers",
    "load_target",
    "missing_capabilities",
    "netns_inode",
]
