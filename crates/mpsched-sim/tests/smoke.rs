use mpsched_sim::build::*;
use mpsched_sim::Simulation;

#[test]
fn smoke_default_scenario() {
    let cfg = stms_lab(100 * MS, 60 * S);
    let out = Simulation::new(cfg, false).unwrap().run();
    println!("{}", serde_json::to_string_pretty(&out.summary).unwrap());
}
