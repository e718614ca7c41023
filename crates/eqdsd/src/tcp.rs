//! What the daemon reads of an inner TCP header, whichever IP version carries it.

/// IP protocol number (IPv4) and next-header value (IPv6) of TCP.
pub const PROTOCOL: u8 = 6;

/// Whether `segment` (a whole TCP segment: header, options and payload) is a pure
/// ACK: ACK set, no SYN, FIN or RST, and no payload. Such packets are what the other
/// direction's data waits on. A header too short or inconsistent is not one.
pub fn is_pure_ack(segment: &[u8]) -> bool {
    const ACK: u8 = 0x10;
    const SYN_FIN_RST: u8 = 0x07;
    if segment.len() < 20 {
        return false;
    }
    let data_offset = usize::from(segment[12] >> 4) * 4;
    let flags = segment[13];
    data_offset >= 20
        && segment.len() == data_offset
        && flags & ACK != 0
        && flags & SYN_FIN_RST == 0
}
