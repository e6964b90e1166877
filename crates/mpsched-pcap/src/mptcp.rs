//! The MPTCP v1 options (RFC 8684 3) and what follows from a key: its token and initial data
//! sequence number (3.1), and the MP_JOIN HMACs (3.2) that tie a subflow to its connection.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// TCP option kind 30.
pub const KIND: u8 = 30;
const VERSION: u8 = 1;
const MP_CAPABLE: u8 = 0;
const MP_JOIN: u8 = 1;
/// The DSS subtype and its flags (RFC 8684 3.3): A, a Data ACK is present; a, it is 8
/// octets; M, a mapping is present; m, its DSN is 8 octets; F, DATA_FIN.
pub const DSS: u8 = 2;
pub const DSS_A: u8 = 0x01;
pub const DSS_A8: u8 = 0x02;
pub const DSS_M: u8 = 0x04;
pub const DSS_M8: u8 = 0x08;
pub const DSS_F: u8 = 0x10;
/// MP_CAPABLE flag H: HMAC-SHA256.
const FLAG_H: u8 = 0x01;

/// The 64-bit Data Sequence Signal mapping: data sequence number, subflow sequence number
/// (relative to the subflow's initial sequence number) and data-level length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub dsn: u64,
    pub ssn: u32,
    pub len: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MptcpOption {
    /// On the SYN: no key (v1).
    CapableSyn,
    /// On the SYN/ACK: the server's key.
    CapableSynAck {
        key: u64,
    },
    /// On the third ACK: the sender's key, then the receiver's.
    CapableAck {
        sender_key: u64,
        receiver_key: u64,
    },
    JoinSyn {
        addr_id: u8,
        token: u32,
        nonce: u32,
        backup: bool,
    },
    JoinSynAck {
        addr_id: u8,
        truncated_hmac: u64,
        nonce: u32,
        backup: bool,
    },
    JoinAck {
        hmac: [u8; 20],
    },
    /// A Data ACK (32-bit when `ack32`, else 64-bit), a mapping, a DATA_FIN.
    Dss {
        data_ack: Option<u64>,
        ack32: bool,
        mapping: Option<Mapping>,
        data_fin: bool,
    },
}

impl MptcpOption {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(&[KIND, 0]);
        match *self {
            MptcpOption::CapableSyn => out.extend_from_slice(&[MP_CAPABLE << 4 | VERSION, FLAG_H]),
            MptcpOption::CapableSynAck { key } => {
                out.extend_from_slice(&[MP_CAPABLE << 4 | VERSION, FLAG_H]);
                out.extend_from_slice(&key.to_be_bytes());
            }
            MptcpOption::CapableAck {
                sender_key,
                receiver_key,
            } => {
                out.extend_from_slice(&[MP_CAPABLE << 4 | VERSION, FLAG_H]);
                out.extend_from_slice(&sender_key.to_be_bytes());
                out.extend_from_slice(&receiver_key.to_be_bytes());
            }
            MptcpOption::JoinSyn {
                addr_id,
                token,
                nonce,
                backup,
            } => {
                out.extend_from_slice(&[MP_JOIN << 4 | u8::from(backup), addr_id]);
                out.extend_from_slice(&token.to_be_bytes());
                out.extend_from_slice(&nonce.to_be_bytes());
            }
            MptcpOption::JoinSynAck {
                addr_id,
                truncated_hmac,
                nonce,
                backup,
            } => {
                out.extend_from_slice(&[MP_JOIN << 4 | u8::from(backup), addr_id]);
                out.extend_from_slice(&truncated_hmac.to_be_bytes());
                out.extend_from_slice(&nonce.to_be_bytes());
            }
            MptcpOption::JoinAck { hmac } => {
                out.extend_from_slice(&[MP_JOIN << 4, 0]);
                out.extend_from_slice(&hmac);
            }
            MptcpOption::Dss {
                data_ack,
                ack32,
                mapping,
                data_fin,
            } => {
                let mut flags = 0u8;
                if data_ack.is_some() {
                    flags |= if ack32 { DSS_A } else { DSS_A | DSS_A8 };
                }
                if mapping.is_some() {
                    flags |= DSS_M | DSS_M8;
                }
                if data_fin {
                    flags |= DSS_F;
                }
                out.extend_from_slice(&[DSS << 4, flags]);
                match data_ack {
                    Some(a) if ack32 => out.extend_from_slice(&(a as u32).to_be_bytes()),
                    Some(a) => out.extend_from_slice(&a.to_be_bytes()),
                    None => {}
                }
                if let Some(m) = mapping {
                    out.extend_from_slice(&m.dsn.to_be_bytes());
                    out.extend_from_slice(&m.ssn.to_be_bytes());
                    out.extend_from_slice(&m.len.to_be_bytes());
                }
            }
        }
        out[at + 1] = (out.len() - at) as u8;
        // Linux pads an option of odd half-words with NOPs (a mapping without checksum).
        if !(out.len() - at).is_multiple_of(4) {
            out.resize(at + (out.len() - at).next_multiple_of(4), 1);
        }
    }
}

/// SHA-256 of a key in network byte order.
fn key_hash(key: u64) -> [u8; 32] {
    Sha256::digest(key.to_be_bytes()).into()
}

/// The token that names a connection in MP_JOIN: the hash's most significant 32 bits.
pub fn token(key: u64) -> u32 {
    u32::from_be_bytes(key_hash(key)[..4].try_into().expect("4 bytes"))
}

/// The initial data sequence number of the data a key's owner sends: the hash's least
/// significant 64 bits.
pub fn idsn(key: u64) -> u64 {
    u64::from_be_bytes(key_hash(key)[24..].try_into().expect("8 bytes"))
}

/// HMAC-SHA256 keyed by `key_a` then `key_b`, over `nonce_a` then `nonce_b` (RFC 8684 3.2).
pub fn join_hmac(key_a: u64, key_b: u64, nonce_a: u32, nonce_b: u32) -> [u8; 32] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&key_a.to_be_bytes());
    k[8..].copy_from_slice(&key_b.to_be_bytes());
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&k).expect("any key length");
    mac.update(&nonce_a.to_be_bytes());
    mac.update(&nonce_b.to_be_bytes());
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(o: MptcpOption) -> Vec<u8> {
        let mut v = vec![];
        o.encode(&mut v);
        v
    }

    #[test]
    fn option_lengths_are_rfc_8684s() {
        assert_eq!(encoded(MptcpOption::CapableSyn), [30, 4, 0x01, 0x01]);
        assert_eq!(encoded(MptcpOption::CapableSynAck { key: 1 }).len(), 12);
        let ack = encoded(MptcpOption::CapableAck {
            sender_key: 1,
            receiver_key: 2,
        });
        assert_eq!(ack[1], 20);
        let join = |o| encoded(o)[1];
        assert_eq!(
            join(MptcpOption::JoinSyn {
                addr_id: 1,
                token: 0,
                nonce: 0,
                backup: false
            }),
            12
        );
        let synack = MptcpOption::JoinSynAck {
            addr_id: 1,
            truncated_hmac: 0,
            nonce: 0,
            backup: true,
        };
        assert_eq!(encoded(synack.clone())[2], 0x11);
        assert_eq!(join(synack), 16);
        assert_eq!(join(MptcpOption::JoinAck { hmac: [0; 20] }), 24);
    }

    #[test]
    fn a_data_segments_dss_is_the_models_24_bytes() {
        // 32-bit Data ACK and 64-bit mapping: 22 bytes and two NOPs, as upstream Linux sends.
        let dss = encoded(MptcpOption::Dss {
            data_ack: Some(7),
            ack32: true,
            mapping: Some(Mapping {
                dsn: 1 << 40,
                ssn: 1,
                len: 1424,
            }),
            data_fin: false,
        });
        assert_eq!(dss.len(), 24);
        assert_eq!(dss[1], 22);
        assert_eq!(dss[3], 0x0D);
        assert_eq!(&dss[22..], &[1, 1]);
        // A pure ACK's 64-bit Data ACK: 12 bytes (`wire::DSS_DATA_ACK`), with DATA_FIN.
        let ack = encoded(MptcpOption::Dss {
            data_ack: Some(9),
            ack32: false,
            mapping: None,
            data_fin: true,
        });
        assert_eq!(ack, [30, 12, 0x20, 0x13, 0, 0, 0, 0, 0, 0, 0, 9]);
    }

    #[test]
    fn token_and_idsn_are_the_two_ends_of_the_keys_sha256() {
        // SHA-256 of eight zero bytes: af5570f5a1810b7a f78caf4bc70a660f 0df51e42baf91d4d e5b2328de0e83dfc.
        assert_eq!(token(0), 0xaf55_70f5);
        assert_eq!(idsn(0), 0xe5b2_328d_e0e8_3dfc);
    }

    #[test]
    fn join_hmac_is_hmac_sha256_of_the_keys_then_the_nonces() {
        // Python: hmac.new(struct.pack(">QQ", 1, 2), struct.pack(">II", 3, 4), sha256).
        let mac = join_hmac(1, 2, 3, 4);
        assert_eq!(mac[..8], 0xe5c5_265e_f877_e594u64.to_be_bytes());
        assert_eq!(mac[24..], 0xe0ef_02c6_4331_6fdfu64.to_be_bytes());
    }
}
