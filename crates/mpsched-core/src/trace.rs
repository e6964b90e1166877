//! Optional per-event records, kept as columns so that they cross to Python as arrays.
//! Every stream is appended in an order the model already has (ACK arrival, Data ACK order,
//! in-order delivery), so no join or sort is needed afterwards.

/// One row per ACK the sender processes.
#[derive(Clone, Debug, Default)]
pub struct AckTrace {
    pub t_ns: Vec<u64>,
    pub subflow: Vec<u8>,
    pub data_ack_bytes: Vec<u64>,
    pub data_ack_step_bytes: Vec<u64>,
    pub right_edge_bytes: Vec<u64>,
    pub cwnd_segments: Vec<u32>,
    pub ssthresh_segments: Vec<u32>,
    pub in_flight_segments: Vec<u32>,
    pub free_cwnd_segments: Vec<u32>,
    pub srtt_ns: Vec<u64>,
}

/// One row per data segment, in data sequence order, written when it is Data-ACKed.
#[derive(Clone, Debug, Default)]
pub struct SentTrace {
    pub first_sent_ns: Vec<u64>,
    pub transmissions: Vec<u16>,
    pub retransmissions: Vec<u16>,
}

/// One row per data segment, in data sequence order, written when it reaches the application.
#[derive(Clone, Debug, Default)]
pub struct DeliveryTrace {
    pub subflow: Vec<u8>,
    pub len_bytes: Vec<u32>,
    pub first_received_ns: Vec<u64>,
    pub delivered_ns: Vec<u64>,
}

/// One row per subflow per round of sending that put packets on it: the bursts a subflow
/// sends back to back (STMS Fig. 4).
#[derive(Clone, Debug, Default)]
pub struct BurstTrace {
    pub t_ns: Vec<u64>,
    pub subflow: Vec<u8>,
    pub packets: Vec<u32>,
}
