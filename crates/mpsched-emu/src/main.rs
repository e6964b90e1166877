//! `mpsched-emu CONFIG.json`: emulate a scenario's paths between TUN devices in real time
//! (see `app`).

fn main() {
    let args: Vec<String> = std::env::args().collect();
    mpsched_emu::app::run(&args)
}
