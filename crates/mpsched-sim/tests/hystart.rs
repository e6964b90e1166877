//! Where CUBIC's HyStart ends slow start on each subflow of the STMS lab, against the kernel:
//! Linux 6.18's Wi-Fi subflow leaves at 69 segments 104-106 ms after the connect and its LTE
//! subflow at 347-352 segments at 0.857-0.862 s, in each of 27 runs traced with
//! `mpsched emulate --kernel-trace` (the lab and the outage scenario, whose first seconds are
//! the lab's; docs/calibration/README.md, "HyStart as 6.18 runs it").

use mpsched_sim::build::*;
use mpsched_sim::Simulation;

/// The first ACK on each subflow that set ssthresh: (time in ns, ssthresh in segments).
fn exits() -> [(u64, u32); 2] {
    let mut c = stms_lab(100 * MS, 2 * S);
    c.scheduler = "linux".into();
    let out = Simulation::new(c, true).unwrap().run();
    let a = &out.traces.as_ref().expect("traced").acks;
    let exit = |sf: u8| {
        (0..a.t_ns.len())
            .find(|&i| a.subflow[i] == sf && a.ssthresh_segments[i] < u32::MAX >> 1)
            .map(|i| (a.t_ns[i], a.ssthresh_segments[i]))
            .unwrap_or_else(|| panic!("subflow {sf} never left slow start"))
    };
    [exit(0), exit(1)]
}

#[test]
fn slow_start_ends_where_the_kernel_s_does() {
    let [(wifi_at, wifi), (lte_at, lte)] = exits();
    // The model: 68 at 104 ms, and LTE at 324 at 0.838 s. With HyStart's rounds started at
    // 16 segments (5.10-6.12) Wi-Fi left at 144, at 140 ms; without the ACK train's GSO
    // cushion at 66. LTE left at 303 before the application's writes came to fill their
    // pages and to follow the subflows' growing buffers as the kernel's do (its first push
    // was then 35 segments against the kernel's 46, and it left 13% early), and at 352 before
    // the client came to join at the first data and to ACK every segment while its window
    // grows (two differences that cancelled). It still leaves 7% early
    // (docs/calibration/README.md, "What remains").
    assert!((67..=71).contains(&wifi), "Wi-Fi left slow start at {wifi}");
    assert!(
        (100 * MS..110 * MS).contains(&wifi_at),
        "Wi-Fi left at {wifi_at} ns"
    );
    // Within 10% of the kernel's 350.
    assert!((315..=385).contains(&lte), "LTE left slow start at {lte}");
    assert!(
        (800 * MS..900 * MS).contains(&lte_at),
        "LTE left at {lte_at} ns"
    );
}
