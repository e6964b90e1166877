//! What the links of a scenario are, and how they change, for every driver: the simulator
//! builds its links from these plans, and so does the emulator, so that both apply the same
//! configuration, the same random streams and the same changes at the same times.

use crate::config::{Config, PathConfig};
use mpsched_core::link::LinkConfig;
use mpsched_core::{Dur, Rate};

/// A change of one link at `at` after the start.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkChange {
    pub at: Dur,
    pub rate: Option<Rate>,
    pub delay: Option<Dur>,
    pub jitter: Option<Dur>,
    /// The link goes down (false: every packet lost, what it holds included) or comes back.
    pub up: Option<bool>,
}

impl LinkChange {
    pub fn is_empty(&self) -> bool {
        self.rate.is_none() && self.delay.is_none() && self.jitter.is_none() && self.up.is_none()
    }
}

/// One `[[path.schedule]]` entry as it applies to each direction: a rate change applies to
/// both, a delay or jitter change to its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathChange {
    pub at: Dur,
    pub path: usize,
    pub down: LinkChange,
    pub up: LinkChange,
    /// The client's address on the path goes away (false) or comes back (true): subflows
    /// close and join again (`Change::present`); the links go down and up with it.
    pub present: Option<bool>,
}

/// One direction of one path's own link, or of a shared link, ready to build.
#[derive(Clone, Debug)]
pub struct LinkPlan {
    /// The path whose own link this is; for a shared link, the number of paths plus its index
    /// in `Config::links`.
    pub path: usize,
    pub name: String,
    /// true for the down (data, server to client) link.
    pub down: bool,
    pub link: LinkConfig,
    /// The link's random stream (loss, jitter): its index among the links plus one (2p + 1
    /// down, 2p + 2 up for path p); stream 0 is the scenario's own (flow sizes, start times).
    pub stream: u64,
    /// Its changes over time, in order, none empty.
    pub changes: Vec<LinkChange>,
}

/// Index of path `p`'s down link among the links, as `Config::link_plans` orders them.
pub fn down_link(p: usize) -> usize {
    2 * p
}

/// Index of path `p`'s up link.
pub fn up_link(p: usize) -> usize {
    2 * p + 1
}

/// The links one path's packets cross, in order, by index among `Config::link_plans`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// Data, server to client: the shared links from the server inwards, then the path's own.
    pub down: Vec<usize>,
    /// ACKs, client to server: the path's own link, then the shared links outwards.
    pub up: Vec<usize>,
}

impl Route {
    /// The links in the direction of data (`true`) or of ACKs.
    #[inline]
    pub fn links(&self, data: bool) -> &[usize] {
        if data {
            &self.down
        } else {
            &self.up
        }
    }
}

impl Config {
    /// Every path's changes in the order they apply: by time, and at the same instant in path
    /// order, then in the order the file lists them.
    pub fn path_changes(&self) -> Vec<PathChange> {
        let mut changes: Vec<PathChange> = self
            .paths
            .iter()
            .enumerate()
            .flat_map(|(p, pc)| pc.schedule.iter().map(move |c| (p, c)))
            .map(|(path, c)| {
                let rate = c.rate_bps.map(Rate::bps);
                let at = Dur(c.at_ns);
                // An address that goes away takes its link down with it.
                let up = c.up.or(c.present);
                PathChange {
                    at,
                    path,
                    down: LinkChange {
                        at,
                        rate,
                        delay: c.delay_down_ns.map(Dur),
                        jitter: c.jitter_down_ns.map(Dur),
                        up,
                    },
                    up: LinkChange {
                        at,
                        rate,
                        delay: c.delay_up_ns.map(Dur),
                        jitter: c.jitter_up_ns.map(Dur),
                        up,
                    },
                    present: c.present,
                }
            })
            .collect();
        // Stable, so that ties keep the order above.
        changes.sort_by_key(|c| c.at);
        changes
    }

    /// Every link: per path the down link, then the up link (see `down_link`, `up_link`);
    /// then per shared link its down link and its up link.
    pub fn link_plans(&self) -> Vec<LinkPlan> {
        let changes = self.path_changes();
        let n = self.paths.len();
        let own = self
            .paths
            .iter()
            .enumerate()
            .flat_map(|(p, pc)| [plan(p, pc, true, &changes), plan(p, pc, false, &changes)]);
        let shared = self.links.iter().enumerate().flat_map(|(s, l)| {
            [true, false].map(|down| LinkPlan {
                path: n + s,
                name: l.name.clone(),
                down,
                link: if down { &l.down } else { &l.up }.to_link(),
                stream: self.shared_link(s, down) as u64 + 1,
                changes: Vec::new(),
            })
        });
        own.chain(shared).collect()
    }

    /// Index of shared link `s`'s down (`true`) or up link among the links.
    pub fn shared_link(&self, s: usize, down: bool) -> usize {
        2 * (self.paths.len() + s) + usize::from(!down)
    }

    /// Each path's route through the links.
    pub fn routes(&self) -> Vec<Route> {
        self.paths
            .iter()
            .enumerate()
            .map(|(p, pc)| Route {
                down: (pc.via.iter().rev())
                    .map(|&s| self.shared_link(s, true))
                    .chain([down_link(p)])
                    .collect(),
                up: [up_link(p)]
                    .into_iter()
                    .chain(pc.via.iter().map(|&s| self.shared_link(s, false)))
                    .collect(),
            })
            .collect()
    }

    /// Whether any path crosses a shared link.
    pub fn has_shared_links(&self) -> bool {
        self.paths.iter().any(|p| !p.via.is_empty())
    }
}

fn plan(p: usize, pc: &PathConfig, down: bool, changes: &[PathChange]) -> LinkPlan {
    LinkPlan {
        path: p,
        name: pc.name.clone(),
        down,
        link: if down { &pc.down } else { &pc.up }.to_link(),
        stream: if down { down_link(p) } else { up_link(p) } as u64 + 1,
        changes: changes
            .iter()
            .filter(|c| c.path == p)
            .map(|c| if down { c.down } else { c.up })
            .filter(|c| !c.is_empty())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"{"duration_ns": 1000000000, "seed": 3, "protocol": "mptcp",
        "scheduler": "default", "congestion": "cubic", "sndbuf_bytes": 1000,
        "rcvbuf_bytes": 1000, "workload": {"kind": "bulk"}, "paths": [
        {"name": "a", "down": {"rate_bps": 30000000, "delay_ns": 20000000,
        "loss": 0.01, "queue": {"time_ns": 50000000}, "jitter_ns": 4000000}, "up": {"rate_bps": 10000000,
        "delay_ns": 10000000, "loss": 0.0, "queue": {"packets": 100}},
        "schedule": [{"at_ns": 2000, "delay_up_ns": 5}, {"at_ns": 1000, "rate_bps": 5},
        {"at_ns": 3000, "jitter_down_ns": 7}]},
        {"name": "b", "down": {"rate_bps": 1000000, "delay_ns": 1, "loss": 0.0,
        "queue": {"bytes": 3000}}, "up": {"rate_bps": 1000000, "delay_ns": 1, "loss": 0.0,
        "queue": {"bytes": 3000}}, "schedule": [{"at_ns": 1000, "delay_down_ns": 9}]}]}"#;

    #[test]
    fn plans_follow_the_paths_and_their_schedules() {
        let cfg = Config::from_json(SCENARIO).unwrap();
        let links = cfg.link_plans();
        assert_eq!(links.len(), 4);
        let (down, up) = (&links[down_link(0)], &links[up_link(0)]);
        assert!(down.down && !up.down);
        assert_eq!((down.stream, up.stream), (1, 2));
        assert_eq!((links[2].stream, links[3].stream), (3, 4));
        assert_eq!(down.link.rate, Rate::mbps(30));
        assert_eq!(up.link.delay, Dur::from_millis(10));
        assert_eq!(
            (down.link.jitter, up.link.jitter),
            (Dur::from_millis(4), Dur::ZERO)
        );
        // Sorted by time; the rate applies to both directions, each delay and jitter to its
        // own; a direction a change does not touch does not list it.
        assert_eq!(down.changes.len(), 2);
        assert_eq!(down.changes[0].rate, Some(Rate::bps(5)));
        assert_eq!(down.changes[1].jitter, Some(Dur(7)));
        assert_eq!(up.changes.len(), 2);
        assert_eq!(up.changes[0].at, Dur(1000));
        assert_eq!(up.changes[1].delay, Some(Dur(5)));
        assert_eq!(links[2].changes.len(), 1);
        assert!(links[3].changes.is_empty());
    }

    #[test]
    fn shared_links_follow_the_paths_links_and_routes_cross_them_in_order() {
        let mut cfg = Config::from_json(SCENARIO).unwrap();
        let shared = |name: &str| crate::config::SharedLinkConfig {
            name: name.into(),
            down: cfg.paths[1].down.clone(),
            up: cfg.paths[1].up.clone(),
        };
        cfg.links = vec![shared("dsl"), shared("core")];
        cfg.paths[0].via = vec![0, 1];
        cfg.paths[1].via = vec![1];
        cfg.validate().unwrap();
        let links = cfg.link_plans();
        assert_eq!(links.len(), 8);
        assert_eq!((links[4].name.as_str(), links[4].down), ("dsl", true));
        assert_eq!((links[7].name.as_str(), links[7].down), ("core", false));
        assert_eq!(links[7].stream, 8);
        let routes = cfg.routes();
        // Data from the server: core, dsl, then the path's own (WiFi) link; ACKs back.
        assert_eq!(routes[0].down, vec![6, 4, 0]);
        assert_eq!(routes[0].up, vec![1, 5, 7]);
        assert_eq!(routes[1].down, vec![6, 2]);
        assert_eq!(routes[1].up, vec![3, 7]);
        cfg.paths[1].via = vec![2];
        assert_eq!(cfg.validate().unwrap_err().field, "paths[1].via[0]");
        cfg.paths[1].via = vec![1, 1];
        assert!(cfg.validate().unwrap_err().reason.contains("listed twice"));
    }

    #[test]
    fn simultaneous_changes_apply_in_path_then_file_order() {
        let cfg = Config::from_json(SCENARIO).unwrap();
        let order: Vec<(u64, usize)> = cfg
            .path_changes()
            .iter()
            .map(|c| (c.at.0, c.path))
            .collect();
        assert_eq!(order, vec![(1000, 0), (1000, 1), (2000, 0), (3000, 0)]);
    }
}
