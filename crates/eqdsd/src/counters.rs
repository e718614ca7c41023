//! The daemon's counters: every packet that is not carried is counted under a reason,
//! so nothing is lost silently. Exported as Prometheus metrics by [`crate::metrics`].

/// Why a packet was dropped, and what was carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Inner packets read from the TUN device.
    pub tun_rx_packets: u64,
    /// Inner packets written to the TUN device.
    pub tun_tx_packets: u64,
    /// UDP datagrams received on the tunnel port.
    pub udp_rx_datagrams: u64,
    /// UDP datagrams sent (data, RTS and control).
    pub udp_tx_datagrams: u64,
    /// Messages the datagrams left in: a GSO train is one (datagrams per message is
    /// the mean train length).
    pub udp_tx_messages: u64,
    /// Reads the received datagrams came in: a coalesced (GRO) read is one.
    pub udp_rx_reads: u64,
    /// DATA packets sent, retransmissions included.
    pub data_sent: u64,
    /// RTS packets sent.
    pub rts_sent: u64,
    /// Control packets (PULL, ACK, NACK, RST) sent.
    pub control_sent: u64,
    /// PULLs left out because a later control packet to the same peer carried a
    /// higher pull number.
    pub pulls_merged: u64,
    /// Inner packets CE-marked because their send queue was past the ECN threshold.
    pub ecn_marked: u64,
    /// Range peers not yet confirmed whose slot in the peer table went to a new peer
    /// (`peers.rs`).
    pub peers_evicted: u64,

    /// Dropped: a datagram from an address outside every peer and peer range.
    pub drop_unknown_peer: u64,
    /// Dropped: a datagram from a peer range while `max_peers` peers exist, all of
    /// them named or confirmed (so none may be evicted).
    pub drop_peer_table_full: u64,
    /// Dropped: an EQDS header that does not decode (garbage, truncated, bad version).
    pub drop_malformed: u64,
    /// Dropped: DATA or RTS whose sender id names no sending EQIF a daemon has (0,
    /// the TUN's; 1, the native interface's).
    pub drop_unknown_eqif: u64,
    /// Dropped: a datagram longer than the tunnel MTU allows.
    pub drop_oversized: u64,
    /// Dropped: a delivered inner packet that is not a whole IPv4 packet.
    pub drop_inner_malformed: u64,
    /// Dropped: a delivered inner packet whose source the peer may not use.
    pub drop_spoofed: u64,
    /// Dropped: a packet from the TUN device that is not a whole IPv4 packet.
    pub drop_tun_malformed: u64,
    /// Dropped: a packet from the TUN device for a destination no peer owns.
    pub drop_no_route: u64,
    /// Dropped: the destination's send queue was full (drop-tail, as the paper's
    /// TCP-compatible EQIF).
    pub drop_send_queue_full: u64,
    /// Dropped: an inner packet larger than the tunnel MTU allows.
    pub drop_too_large: u64,
    /// Dropped: no packet buffer free.
    pub drop_no_buffer: u64,
    /// Dropped: the kernel refused to send a datagram.
    pub drop_send_error: u64,
    /// Dropped: writing to the TUN device failed.
    pub drop_tun_write_error: u64,
    /// Dropped: held by a receive tunnel whose state was lost (peer restart).
    pub drop_lost_on_restart: u64,
    /// Dropped: held for or from a peer evicted from the peer table (its send queue,
    /// packets in flight, its reorder queue).
    pub drop_evicted: u64,

    /// Datagrams read from the native socket (DATA and HELLO, well-formed or not).
    pub native_rx_datagrams: u64,
    /// Native payloads taken into a send queue.
    pub native_enqueued: u64,
    /// Native payloads delivered to the local application.
    pub native_delivered: u64,
    /// Dropped: a native datagram that does not decode (short, bad version or kind).
    pub drop_native_malformed: u64,
    /// Dropped: a native payload for a tunnel address no peer or range has.
    pub drop_native_unknown_peer: u64,
    /// Dropped: a native payload larger than the inner MTU.
    pub drop_native_too_large: u64,
    /// Refused: a native payload that found its destination's send queue full (the
    /// application was told BUSY).
    pub drop_native_send_queue_full: u64,
    /// Dropped: a delivered native payload with no application to take it (the native
    /// socket is off, or no application has sent to it yet).
    pub drop_native_no_app: u64,
    /// Dropped: a delivered native payload the application did not read in time (its
    /// queue in the daemon was full) or whose write failed.
    pub drop_native_app_slow: u64,
}

impl Counters {
    /// Every counter as (metric name, help, value), in a fixed order. Drop counters are
    /// exported as one metric with a `reason` label.
    pub fn entries(&self) -> Vec<(&'static str, &'static str, u64)> {
        [
            (
                "tun_rx_packets",
                "Inner packets read from the TUN device",
                self.tun_rx_packets,
            ),
            (
                "tun_tx_packets",
                "Inner packets written to the TUN device",
                self.tun_tx_packets,
            ),
            (
                "udp_rx_datagrams",
                "Datagrams received on the tunnel port",
                self.udp_rx_datagrams,
            ),
            ("udp_tx_datagrams", "Datagrams sent", self.udp_tx_datagrams),
            (
                "udp_tx_messages",
                "Send messages (a GSO train is one)",
                self.udp_tx_messages,
            ),
            (
                "udp_rx_reads",
                "Datagram reads (a coalesced GRO read is one)",
                self.udp_rx_reads,
            ),
            (
                "data_sent",
                "DATA packets sent, retransmissions included",
                self.data_sent,
            ),
            ("rts_sent", "RTS packets sent", self.rts_sent),
            (
                "control_sent",
                "PULL, ACK, NACK and RST packets sent",
                self.control_sent,
            ),
            (
                "pulls_merged",
                "PULLs superseded by a later control packet",
                self.pulls_merged,
            ),
            (
                "ecn_marked",
                "Inner packets CE-marked at a long send queue",
                self.ecn_marked,
            ),
            (
                "peers_evicted",
                "Unconfirmed range peers whose peer-table slot went to a new peer",
                self.peers_evicted,
            ),
            ("drop:unknown_peer", "", self.drop_unknown_peer),
            ("drop:peer_table_full", "", self.drop_peer_table_full),
            ("drop:malformed", "", self.drop_malformed),
            ("drop:unknown_eqif", "", self.drop_unknown_eqif),
            ("drop:oversized", "", self.drop_oversized),
            ("drop:inner_malformed", "", self.drop_inner_malformed),
            ("drop:spoofed", "", self.drop_spoofed),
            ("drop:tun_malformed", "", self.drop_tun_malformed),
            ("drop:no_route", "", self.drop_no_route),
            ("drop:send_queue_full", "", self.drop_send_queue_full),
            ("drop:too_large", "", self.drop_too_large),
            ("drop:no_buffer", "", self.drop_no_buffer),
            ("drop:send_error", "", self.drop_send_error),
            ("drop:tun_write_error", "", self.drop_tun_write_error),
            ("drop:lost_on_restart", "", self.drop_lost_on_restart),
            ("drop:evicted", "", self.drop_evicted),
            (
                "native_rx_datagrams",
                "Datagrams read from the native socket",
                self.native_rx_datagrams,
            ),
            (
                "native_enqueued",
                "Native payloads taken into a send queue",
                self.native_enqueued,
            ),
            (
                "native_delivered",
                "Native payloads delivered to the local application",
                self.native_delivered,
            ),
            ("drop:native_malformed", "", self.drop_native_malformed),
            (
                "drop:native_unknown_peer",
                "",
                self.drop_native_unknown_peer,
            ),
            ("drop:native_too_large", "", self.drop_native_too_large),
            (
                "drop:native_send_queue_full",
                "",
                self.drop_native_send_queue_full,
            ),
            ("drop:native_no_app", "", self.drop_native_no_app),
            ("drop:native_app_slow", "", self.drop_native_app_slow),
        ]
        .to_vec()
    }
}
