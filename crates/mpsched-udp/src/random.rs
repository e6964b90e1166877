//! Unpredictable bytes from the operating system (`getrandom`): challenges, cookies, nonces.
//! Nothing an attacker can see or guess (a clock) stands in for them.

/// Fills `buf`; the OS's generator does not fail once the system has booted, so a failure
/// aborts rather than hand out predictable bytes.
pub fn fill(buf: &mut [u8]) {
    getrandom::getrandom(buf).expect("the operating system's random bytes");
}

pub fn u64() -> u64 {
    let mut b = [0u8; 8];
    fill(&mut b);
    u64::from_le_bytes(b)
}

/// A path challenge: random, and never `wire::NO_PROOF`.
pub fn challenge() -> u64 {
    loop {
        let c = u64();
        if c != crate::wire::NO_PROOF {
            return c;
        }
    }
}

pub fn u32() -> u32 {
    let mut b = [0u8; 4];
    fill(&mut b);
    u32::from_le_bytes(b)
}
