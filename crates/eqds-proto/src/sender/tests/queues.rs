//! Send queues and bytes in flight: enqueue limits, queuing ahead, queue lengths.

use super::*;

#[test]
fn packets_queued_ahead_leave_before_waiting_data_and_in_their_own_order() {
    // RTS mode: nothing leaves until a PULL, so the queue order is what we see.
    let mut s = loaded(Mode::Rts, 3);
    s.enqueue_ahead(0, 1, 40, 100).unwrap();
    s.enqueue(0, 1, FULL, 3).unwrap();
    s.enqueue_ahead(0, 1, 40, 101).unwrap();
    drain(&mut s, 0);
    s.handle_control(10, 1, &pull(4));
    let order: Vec<u32> = drain(&mut s, 10).iter().filter_map(|t| t.payload).collect();
    assert_eq!(order, vec![100, 101, 0, 1, 2]);
    // Packet 3 did not fit in that credit and still waits; a later packet queued
    // ahead passes it too, one queued the ordinary way does not.
    s.enqueue(20, 1, FULL, 4).unwrap();
    s.enqueue_ahead(20, 1, 40, 102).unwrap();
    s.handle_control(30, 1, &pull(6));
    let order: Vec<u32> = drain(&mut s, 30).iter().filter_map(|t| t.payload).collect();
    assert_eq!(order, vec![102, 3, 4]);
}

#[test]
fn enqueue_refuses_full_queues_and_oversized_packets() {
    let mut s = Sender::new(config(Mode::Rts));
    assert_eq!(
        s.enqueue(0, 1, FULL + 1, 99),
        Err(EnqueueError::TooLarge(99))
    );
    for i in 0..16 {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    assert_eq!(
        s.enqueue(0, 1, FULL, 16),
        Err(EnqueueError::Backpressure(16))
    );
}

#[test]
fn send_queue_len_counts_packets_awaiting_credit() {
    let mut s = loaded(Mode::Rts, 5);
    assert_eq!(s.send_queue_len(1), 5);
    assert_eq!(s.send_queue_len(2), 0);
    drain(&mut s, 0);
    s.handle_control(1, 1, &pull(2));
    drain(&mut s, 1);
    assert_eq!(s.send_queue_len(1), 3);
}

#[test]
fn in_flight_total_follows_every_tunnel() {
    let mut s = Sender::new(config(Mode::Ndp));
    let sum = |s: &Sender<u32>| -> u64 {
        [1, 2]
            .iter()
            .filter_map(|&d| s.tunnel(d))
            .map(|t| t.in_flight_bytes)
            .sum()
    };
    for dst in [1, 2] {
        for i in 0..3 {
            s.enqueue(0, dst, FULL, 10 * dst + i).unwrap();
        }
    }
    drain(&mut s, 0);
    assert_eq!(s.in_flight_bytes(), u64::from(6 * MTU));
    assert_eq!(s.in_flight_bytes(), sum(&s));
    // An ACK, a NACK, an RTO and a dropped tunnel each take their packets out.
    let seq_of = |s: &mut Sender<u32>, dst| {
        s.enqueue(1, dst, FULL, 99).unwrap();
        let tx = drain(s, 1);
        tx.last().map(|t| t.header.seq).unwrap()
    };
    let seq = seq_of(&mut s, 1);
    assert_eq!(s.in_flight_bytes(), u64::from(7 * MTU));
    let mut ack = control(ControlKind::Ack, seq, 0, 0);
    ack.sender_id = 7;
    s.handle_control(2, 1, &ack);
    assert_eq!(s.in_flight_bytes(), u64::from(6 * MTU));
    assert_eq!(s.in_flight_bytes(), sum(&s));
    s.drop_tunnel(2);
    assert_eq!(s.in_flight_bytes(), u64::from(3 * MTU));
    s.handle_timeout(10 * RTO);
    assert_eq!(s.in_flight_bytes(), 0);
    assert_eq!(s.in_flight_bytes(), sum(&s));
    assert_eq!(s.peak_in_flight_bytes(), u64::from(7 * MTU));
}

#[test]
fn a_byte_limit_admits_many_small_packets_and_few_large_ones() {
    let mut s = Sender::new(SenderConfig {
        send_queue_packets: usize::MAX,
        send_queue_bytes: u64::from(4 * MTU),
        ..config(Mode::Rts)
    });
    // RTS mode: nothing leaves before credit, so the queue only fills.
    for i in 0..4 {
        s.enqueue(0, 1, FULL, i).unwrap();
    }
    assert!(matches!(
        s.enqueue(0, 1, FULL, 9),
        Err(EnqueueError::Backpressure(9))
    ));
    assert_eq!(s.send_queue_bytes(1), u64::from(4 * MTU));
    // 100-byte charged packets (no inner bytes): forty fit in the same space.
    for i in 0..40 {
        s.enqueue(0, 2, 0, i).unwrap();
    }
    assert!(s.enqueue(0, 2, 0, 99).is_err());
    assert_eq!(s.send_queue_len(2), 40);
}
