"""``python -m mpsched.testbed.emulator CONFIG.json``: the link emulator (``mpsched-emu``) as
a process of its own, run from the native module, so that the testbed works from an
installed wheel without a Rust toolchain or a source tree."""

from __future__ import annotations

import sys

from mpsched import _native


def main(argv: list[str]) -> None:
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python -m mpsched.testbed.emulator CONFIG.json", file=sys.stderr)
        raise SystemExit(2)
    _native.emulator_main(argv[0])


if __name__ == "__main__":
    main(sys.argv[1:])
