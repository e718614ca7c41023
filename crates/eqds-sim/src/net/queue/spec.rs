//! Queue disciplines as written in scenario files, and how they are built.

use super::red::RedParams;
use super::{
    DropTail, FairQueue, QueueDiscipline, RandomLoss, Red, StrictPriority, TrimScheduler, Trimming,
};
use crate::units::value::Bytes;
use serde::Deserialize;

/// How much a queue may hold. With both set, the first one reached applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub packets: Option<u32>,
    pub bytes: Option<u64>,
}

impl Limit {
    pub const UNLIMITED: Limit = Limit {
        packets: None,
        bytes: None,
    };

    /// Whether a packet of `size` bytes fits behind `len` packets of `bytes` bytes.
    #[inline]
    pub fn admits(&self, len: u32, bytes: u64, size: u32) -> bool {
        self.packets.is_none_or(|p| len < p) && self.bytes.is_none_or(|b| bytes + size as u64 <= b)
    }
}

/// A queue discipline in a scenario file (`kind = "..."` selects the variant).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueSpec {
    /// Drop arrivals beyond the limit.
    DropTail {
        limit_packets: Option<u32>,
        limit_bytes: Option<Bytes>,
    },
    /// DCTCP step marking: mark CE when the instantaneous backlog is at least K.
    Ecn {
        limit_packets: Option<u32>,
        limit_bytes: Option<Bytes>,
        k_packets: Option<u32>,
        k_bytes: Option<Bytes>,
    },
    /// RED with ECN marking between `min` and `max` (DCQCN's Kmin/Kmax/Pmax).
    Red {
        limit_packets: Option<u32>,
        limit_bytes: Option<Bytes>,
        min_packets: Option<u32>,
        max_packets: Option<u32>,
        min_bytes: Option<Bytes>,
        max_bytes: Option<Bytes>,
        p_max: f64,
        /// EWMA weight of the averaged queue; 1.0 (default) is the instantaneous queue.
        #[serde(default = "one")]
        weight: f64,
        /// Drop (rather than let through) non-ECT packets when RED says "congested".
        #[serde(default)]
        drop_non_ect: bool,
        /// `"enqueue"` (default: the arriving packet is marked, as the DCQCN paper
        /// says) or `"dequeue"` (the departing one, judged by the queue behind it,
        /// as DCQCN's and HPCC's ns-3 models do).
        #[serde(default = "default_mark_at")]
        mark_at: String,
    },
    /// Ideal per-flow fair queueing: deficit round robin between flows, and the
    /// longest flow loses a packet when the shared buffer is full.
    FairQueue {
        limit_packets: Option<u32>,
        limit_bytes: Option<Bytes>,
        /// Bytes a flow may send per round (default 1500 B).
        #[serde(default = "default_quantum")]
        quantum: Bytes,
    },
    /// Strict priority; `classes[0]` is served first. Packets pick a class by `class`.
    StrictPriority { classes: Vec<QueueSpec> },
    /// NDP's ideal trimming queue: a small data queue, a header queue for trimmed
    /// headers and control packets, WFQ or strict priority between them.
    Trimming {
        /// Data queue size in packets (default 8).
        #[serde(default = "default_trim_data")]
        data_packets: u32,
        /// Data queue size in bytes instead of packets, as switch buffers count:
        /// small data packets (a TCP ACK inside EQDS) then take little room.
        data_bytes: Option<Bytes>,
        /// Header queue size in packets (default 64 per data-queue packet).
        header_packets: Option<u32>,
        /// Size of a trimmed header on the wire (default 64 B).
        #[serde(default = "default_trim_header")]
        header_bytes: Bytes,
        /// `"wfq"` (default) or `"strict_priority"`.
        #[serde(default = "default_trim_sched")]
        scheduling: String,
        /// WFQ byte weights (default 10:1 in favour of headers: the trimming paper, §2,
        /// asks for byte-based WFQ but gives no weight, so this is our choice).
        #[serde(default = "default_header_weight")]
        header_weight: u32,
        #[serde(default = "one_u32")]
        data_weight: u32,
        /// Return headers to their sender when the header queue is full (default true).
        #[serde(default = "yes")]
        return_to_sender: bool,
    },
    /// Non-congestion loss (corruption) in front of `queue`: each arriving packet is
    /// lost with probability `rate`, drawn from the run's seeded generator.
    RandomLoss { rate: f64, queue: Box<QueueSpec> },
}

fn default_quantum() -> Bytes {
    Bytes(1500)
}

fn default_trim_data() -> u32 {
    8
}
fn default_trim_header() -> Bytes {
    Bytes(64)
}
fn default_trim_sched() -> String {
    "wfq".into()
}
fn default_header_weight() -> u32 {
    10
}
fn one_u32() -> u32 {
    1
}
fn yes() -> bool {
    true
}

/// WFQ credit per unit of weight and turn: one 1500 B packet.
const WFQ_QUANTUM_BYTES: u64 = 1500;

fn default_mark_at() -> String {
    "enqueue".into()
}

fn one() -> f64 {
    1.0
}

fn limit(packets: Option<u32>, bytes: Option<Bytes>) -> Limit {
    Limit {
        packets,
        bytes: bytes.map(|b| b.0),
    }
}

/// Exactly one of a packets/bytes pair, or an error naming both fields.
fn one_of(packets: Option<u32>, bytes: Option<Bytes>, name: &str) -> Result<(u64, bool), String> {
    match (packets, bytes) {
        (Some(p), None) => Ok((p as u64, true)),
        (None, Some(b)) => Ok((b.0, false)),
        (None, None) => Err(format!("needs `{name}_packets` or `{name}_bytes`")),
        (Some(_), Some(_)) => Err(format!("give `{name}_packets` or `{name}_bytes`, not both")),
    }
}

/// A checked queue specification, ready to build.
enum Plan {
    DropTail(Limit),
    Red(Limit, RedParams),
    StrictPriority(Vec<Plan>),
    FairQueue(Limit, u32),
    Trimming {
        data: Limit,
        headers: Limit,
        header_bytes: u32,
        scheduler: TrimScheduler,
        return_to_sender: bool,
    },
    RandomLoss(f64, Box<Plan>),
}

impl Plan {
    fn build(self) -> Box<dyn QueueDiscipline> {
        match self {
            Plan::DropTail(l) => Box::new(DropTail::new(l)),
            Plan::FairQueue(l, quantum) => Box::new(FairQueue::new(l, quantum)),
            Plan::Red(l, params) => Box::new(Red::new(l, params)),
            Plan::Trimming {
                data,
                headers,
                header_bytes,
                scheduler,
                return_to_sender,
            } => Box::new(Trimming::new(
                data,
                headers,
                header_bytes,
                scheduler,
                return_to_sender,
            )),
            Plan::StrictPriority(classes) => Box::new(StrictPriority::new(
                classes.into_iter().map(Plan::build).collect(),
            )),
            Plan::RandomLoss(rate, inner) => Box::new(RandomLoss::new(rate, inner.build())),
        }
    }
}

fn checked_limit(packets: Option<u32>, bytes: Option<Bytes>) -> Result<Limit, String> {
    if packets == Some(0) || bytes.is_some_and(|b| b.0 == 0) {
        return Err("a queue limit of 0 would drop every packet".into());
    }
    Ok(limit(packets, bytes))
}

impl QueueSpec {
    /// Checks the parameters; errors are prefixed by the caller with the field path.
    pub fn validate(&self) -> Result<(), String> {
        self.plan().map(|_| ())
    }

    /// The queue packets of class `class` land in, and its key path below this one
    /// (`.classes[i]` for strict priority). A `random_loss` wrapper is looked
    /// through (`.queue`): its losses model corruption, which PFC cannot prevent, so
    /// it is allowed on a lossless class, but the queue it wraps must still leave
    /// overflow to PFC.
    pub fn class_for(&self, class: u8) -> (&QueueSpec, String) {
        match self {
            QueueSpec::StrictPriority { classes } if !classes.is_empty() => {
                let i = usize::from(class).min(classes.len() - 1);
                let (q, path) = classes[i].class_for(class);
                (q, format!(".classes[{i}]{path}"))
            }
            QueueSpec::RandomLoss { queue, .. } => {
                let (q, path) = queue.class_for(class);
                (q, format!(".queue{path}"))
            }
            q => (q, String::new()),
        }
    }

    /// Whether this queue, or one inside it, loses packets at random.
    pub fn loses_at_random(&self) -> bool {
        match self {
            QueueSpec::RandomLoss { .. } => true,
            QueueSpec::StrictPriority { classes } => classes.iter().any(Self::loses_at_random),
            _ => false,
        }
    }

    /// Why this queue may drop a packet by itself, if it may: a limit, dropping
    /// instead of marking, trimming.
    pub fn drops_on_its_own(&self) -> Option<&'static str> {
        let limited = |p: &Option<u32>, b: &Option<Bytes>| p.is_some() || b.is_some();
        match self {
            QueueSpec::DropTail {
                limit_packets,
                limit_bytes,
            }
            | QueueSpec::Ecn {
                limit_packets,
                limit_bytes,
                ..
            }
            | QueueSpec::FairQueue {
                limit_packets,
                limit_bytes,
                ..
            } if limited(limit_packets, limit_bytes) => Some("has a limit"),
            QueueSpec::Red { drop_non_ect, .. } if *drop_non_ect => {
                Some("drops non-ECT packets (drop_non_ect)")
            }
            QueueSpec::Red {
                limit_packets,
                limit_bytes,
                ..
            } if limited(limit_packets, limit_bytes) => Some("has a limit"),
            QueueSpec::Trimming { .. } => Some("trims"),
            _ => None,
        }
    }

    /// Builds the discipline. Call [`validate`](Self::validate) first.
    pub fn build(&self) -> Box<dyn QueueDiscipline> {
        self.plan()
            .expect("queue specs are validated when the scenario loads")
            .build()
    }

    fn plan(&self) -> Result<Plan, String> {
        match self {
            QueueSpec::DropTail {
                limit_packets,
                limit_bytes,
            } => Ok(Plan::DropTail(checked_limit(*limit_packets, *limit_bytes)?)),
            QueueSpec::Ecn {
                limit_packets,
                limit_bytes,
                k_packets,
                k_bytes,
            } => {
                let l = checked_limit(*limit_packets, *limit_bytes)?;
                let (k, in_packets) = one_of(*k_packets, *k_bytes, "k")?;
                let step = RedParams {
                    min: k,
                    max: k,
                    p_max: 1.0,
                    in_packets,
                    weight: 1.0,
                    drop_non_ect: false,
                    at_dequeue: false,
                };
                Ok(Plan::Red(l, step))
            }
            QueueSpec::Red {
                limit_packets,
                limit_bytes,
                min_packets,
                max_packets,
                min_bytes,
                max_bytes,
                p_max,
                weight,
                drop_non_ect,
                mark_at,
            } => {
                let l = checked_limit(*limit_packets, *limit_bytes)?;
                let (min, min_pk) = one_of(*min_packets, *min_bytes, "min")?;
                let (max, max_pk) = one_of(*max_packets, *max_bytes, "max")?;
                if min_pk != max_pk {
                    return Err("`min` and `max` must both be in packets or both in bytes".into());
                }
                if min > max {
                    return Err(format!("min ({min}) must not exceed max ({max})"));
                }
                if !(0.0..=1.0).contains(p_max) {
                    return Err(format!("p_max must be within [0, 1], got {p_max}"));
                }
                if !(*weight > 0.0 && *weight <= 1.0) {
                    return Err(format!("weight must be within (0, 1], got {weight}"));
                }
                let at_dequeue = match mark_at.as_str() {
                    "enqueue" => false,
                    "dequeue" => true,
                    other => {
                        return Err(format!(
                            "mark_at: `{other}` is not one of `enqueue`, `dequeue`"
                        ))
                    }
                };
                let params = RedParams {
                    min,
                    max,
                    p_max: *p_max,
                    in_packets: min_pk,
                    weight: *weight,
                    drop_non_ect: *drop_non_ect,
                    at_dequeue,
                };
                Ok(Plan::Red(l, params))
            }
            QueueSpec::Trimming {
                data_packets,
                data_bytes,
                header_packets,
                header_bytes,
                scheduling,
                header_weight,
                data_weight,
                return_to_sender,
            } => {
                let data = match data_bytes {
                    Some(b) => {
                        checked_limit(None, Some(*b)).map_err(|e| format!("data_bytes: {e}"))?
                    }
                    None => checked_limit(Some(*data_packets), None)
                        .map_err(|e| format!("data_packets: {e}"))?,
                };
                let header_packets = header_packets.unwrap_or(data_packets.saturating_mul(64));
                let headers = checked_limit(Some(header_packets), None)
                    .map_err(|e| format!("header_packets: {e}"))?;
                if header_bytes.0 == 0 || header_bytes.0 > 65535 {
                    return Err(format!(
                        "header_bytes: must be from 1 to 65535, got {}",
                        header_bytes.0
                    ));
                }
                let scheduler = match scheduling.as_str() {
                    "strict_priority" => TrimScheduler::StrictPriority,
                    "wfq" => {
                        if *header_weight == 0 || *data_weight == 0 {
                            return Err("header_weight and data_weight: must be at least 1".into());
                        }
                        TrimScheduler::Wfq {
                            quantum: [
                                *header_weight as u64 * WFQ_QUANTUM_BYTES,
                                *data_weight as u64 * WFQ_QUANTUM_BYTES,
                            ],
                        }
                    }
                    other => {
                        return Err(format!(
                            "scheduling: `{other}` is not one of `wfq`, `strict_priority`"
                        ))
                    }
                };
                Ok(Plan::Trimming {
                    data,
                    headers,
                    header_bytes: header_bytes.0 as u32,
                    scheduler,
                    return_to_sender: *return_to_sender,
                })
            }
            QueueSpec::FairQueue {
                limit_packets,
                limit_bytes,
                quantum,
            } => {
                if limit_packets.is_none() && limit_bytes.is_none() {
                    return Err("fair_queue needs `limit_packets` or `limit_bytes`".into());
                }
                if quantum.0 == 0 || quantum.0 > u64::from(u32::MAX) {
                    return Err(format!(
                        "quantum: must be from 1 B to 4 GB, got {} B",
                        quantum.0
                    ));
                }
                let l = checked_limit(*limit_packets, *limit_bytes)?;
                Ok(Plan::FairQueue(l, quantum.0 as u32))
            }
            QueueSpec::StrictPriority { classes } => {
                if classes.is_empty() {
                    return Err("strict_priority needs at least one entry in `classes`".into());
                }
                let plans = classes
                    .iter()
                    .enumerate()
                    .map(|(i, c)| c.plan().map_err(|e| format!("classes[{i}]: {e}")))
                    .collect::<Result<_, _>>()?;
                Ok(Plan::StrictPriority(plans))
            }
            QueueSpec::RandomLoss { rate, queue } => {
                // 1 would lose every packet; NaN compares false and is refused too.
                if !(0.0..1.0).contains(rate) {
                    return Err(format!(
                        "rate: a loss probability must be within [0, 1), got {rate}"
                    ));
                }
                let inner = queue.plan().map_err(|e| format!("queue: {e}"))?;
                Ok(Plan::RandomLoss(*rate, Box::new(inner)))
            }
        }
    }
}
