//! What an event wakes: the simulator's components, and their dense ids in the event list
//! (which indexes its per-component slot by id).

use crate::event::ComponentId;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// The paths' scheduled changes (`[[path.schedule]]`).
    Schedule,
    /// The trace sampler (observes the model; not part of it).
    Sampler,
    /// The main connection's rate-limited application (`Workload::Rate`).
    App,
    /// Link `l` (2p: path p's down link, 2p + 1 its up link).
    Link(usize),
    /// Connection `k`'s server socket (0: the main connection).
    Server(usize),
    /// Connection `k`'s client socket.
    Client(usize),
    /// Connection `k`'s handshakes: its first SYN, SYNs and SYN-ACKs sent again.
    Handshake(usize),
}

/// The numbering: the three singletons, then the links, then each connection's server,
/// client and handshake.
#[derive(Clone, Copy, Debug)]
pub struct Components {
    links: usize,
}

const FIRST_LINK: usize = 3;
/// Ids of one connection: three used, a power of two so that decoding an id is a shift (the
/// fourth is never scheduled).
const PER_CONN: usize = 4;

impl Components {
    pub fn new(links: usize) -> Components {
        Components { links }
    }

    /// How many ids `conns` connections need.
    pub fn count(&self, conns: usize) -> usize {
        FIRST_LINK + self.links + PER_CONN * conns
    }

    pub fn id(&self, c: Component) -> ComponentId {
        let first_conn = FIRST_LINK + self.links;
        (match c {
            Component::Schedule => 0,
            Component::Sampler => 1,
            Component::App => 2,
            Component::Link(l) => FIRST_LINK + l,
            Component::Server(k) => first_conn + PER_CONN * k,
            Component::Client(k) => first_conn + PER_CONN * k + 1,
            Component::Handshake(k) => first_conn + PER_CONN * k + 2,
        }) as ComponentId
    }

    pub fn component(&self, id: ComponentId) -> Component {
        let id = id as usize;
        let first_conn = FIRST_LINK + self.links;
        match id {
            0 => Component::Schedule,
            1 => Component::Sampler,
            2 => Component::App,
            _ if id < first_conn => Component::Link(id - FIRST_LINK),
            _ => {
                let (k, which) = ((id - first_conn) / PER_CONN, (id - first_conn) % PER_CONN);
                match which {
                    0 => Component::Server(k),
                    1 => Component::Client(k),
                    _ => Component::Handshake(k),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_and_decode_to_what_they_encode() {
        let ids = Components::new(4);
        let all: Vec<Component> = [Component::Schedule, Component::Sampler, Component::App]
            .into_iter()
            .chain((0..4).map(Component::Link))
            .chain((0..3).flat_map(|k| {
                [
                    Component::Server(k),
                    Component::Client(k),
                    Component::Handshake(k),
                ]
            }))
            .collect();
        // Distinct ids below the count, each decoding to its component; one spare id per
        // connection.
        let mut seen = std::collections::BTreeSet::new();
        for c in &all {
            let id = ids.id(*c);
            assert!((id as usize) < ids.count(3) && seen.insert(id), "{c:?}");
            assert_eq!(ids.component(id), *c);
        }
        assert_eq!(all.len() + 3, ids.count(3));
    }
}
