//! A bad scheduler name or parameter is refused with the field it is in, for the main
//! connection and for a competing flow alike (the core's message names only the key).

fn refusal(scheduler_fields: &str, flow_fields: &str) -> String {
    let link =
        r#"{"rate_bps": 10000000, "delay_ns": 10000000, "loss": 0.0, "queue": {"packets": 100}}"#;
    let json = format!(
        r#"{{"duration_ns": 1000000000, "seed": 1, "protocol": "mptcp", {scheduler_fields},
            "congestion": "reno", "sndbuf_bytes": 1000000, "rcvbuf_bytes": 1000000,
            "workload": {{"kind": "bulk"}},
            "paths": [{{"name": "a", "down": {link}, "up": {link}}}],
            "flows": [{{"start_ns": 0, "protocol": "mptcp", "congestion": "reno", "paths": [0],
                        {flow_fields}}}]}}"#
    );
    match mpsched_sim::run_json(&json, false) {
        Ok(_) => panic!("accepted: {json}"),
        Err(e) => e.to_string(),
    }
}

const GOOD: &str = r#""scheduler": "minrtt""#;

#[test]
fn the_main_connection_s_scheduler() {
    assert!(refusal(r#""scheduler": "nope""#, GOOD)
        .starts_with("connection.scheduler: unknown scheduler 'nope' (known: minrtt, default, "));
    assert_eq!(
        refusal(
            r#""scheduler": "bm", "scheduler_params": {"lambda": 0}"#,
            GOOD
        ),
        "connection.scheduler_params.lambda: must be in [0.1, 100], got 0"
    );
    assert_eq!(
        refusal(
            r#""scheduler": "rr", "scheduler_params": {"lambda": 1}"#,
            GOOD
        ),
        "connection.scheduler_params.lambda: unknown parameter of 'rr' (it takes no parameters)"
    );
}

#[test]
fn a_competing_flow_s_scheduler() {
    assert!(refusal(GOOD, r#""scheduler": "nope""#)
        .starts_with("flows[0].scheduler: unknown scheduler 'nope' (known: minrtt, "));
    assert_eq!(
        refusal(
            GOOD,
            r#""scheduler": "mptcp-sf", "scheduler_params": {"s1_bytes": 5, "s2_bytes": 4}"#
        ),
        "flows[0].scheduler_params.s2_bytes: must be >= s1_bytes (5), got 4"
    );
}
