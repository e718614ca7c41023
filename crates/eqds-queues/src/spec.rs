//! Queue disciplines as written in scenario and switch configuration files, and how
//! they are built.

use crate::afq::{AfqEcn, AfqParams, RoundOf, RspVariant, MAX_QUEUES};
use crate::count_min::{mix64, SketchUpdate, MAX_ROWS};
use crate::red::RedParams;
use crate::sfq::SfqDrop;
use crate::{
    Afq, DropTail, FairQueue, IdealFq, PacketStore, QueueDiscipline, RandomLoss, Red, Sfq,
    StrictPriority, Time, TrimScheduler, Trimming,
};
use eqds_proto::time::PS_PER_US as US;
use eqds_proto::units::value::{Bytes, Duration};
use rand::RngCore;
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

/// A queue discipline in a scenario or switch configuration file (`kind = "..."`
/// selects the variant; [`crate::config`] reads such a table).
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
    /// Approximate fair queueing (AFQ, NSDI'18): per-flow bids in a count-min
    /// sketch, `queues` FIFOs of `bytes_per_round` rounds, rotating strict priority.
    /// Defaults are the paper's simulation settings (§6.2).
    Afq {
        /// The port's buffer, shared by the queues (the paper: 512 KB at a leaf,
        /// 1 MB at a spine; §6.2). Unlimited if neither is given.
        limit_packets: Option<u32>,
        limit_bytes: Option<Bytes>,
        /// FIFO queues per port (default 32, §6.2).
        #[serde(default = "default_afq_queues")]
        queues: u32,
        /// BpR (default 1500 B: one MSS, §6.2, at the 1500 B packets digest §2 infers).
        #[serde(default = "default_quantum")]
        bytes_per_round: Bytes,
        /// `"sketch"` (default) or `"exact"` (a per-flow table, to compare).
        #[serde(default = "default_bids")]
        bids: String,
        /// Sketch rows (default 2) and columns (default 16384), §6.2.
        sketch_rows: Option<u32>,
        sketch_columns: Option<u32>,
        /// `"max"` (default: conservative update) or `"increment"`.
        sketch_update: Option<String>,
        /// `"floor"` (default: bid / BpR, the paper's text) or `"last_byte"`.
        #[serde(default = "default_round_of")]
        round_of: String,
        /// `"per_flow"` (default, §5.2), `"port"` (DCTCP's K on the port backlog) or
        /// `"off"`.
        #[serde(default = "default_afq_ecn")]
        ecn: String,
        /// Per-flow marking threshold in rounds (default 8, §5.2).
        ecn_rounds: Option<u32>,
        /// Port marking threshold (with `ecn = "port"`).
        ecn_k_packets: Option<u32>,
        ecn_k_bytes: Option<Bytes>,
        /// `"rsp"` (default: ideal rotating strict priority), `"drr"`,
        /// `"two_groups"` or `"rmt"` (§4).
        #[serde(default = "default_scheduler")]
        scheduler: String,
        /// DRR's quantum (default: the buffer, more than any round can hold).
        drr_quantum: Option<Bytes>,
        /// The two-group scheduler's swap period (default 10 us, §4).
        tau: Option<Duration>,
        /// Keep exact bids beside the sketch and count mis-queued packets (A15).
        #[serde(default)]
        count_misqueued: bool,
    },
    /// Stochastic fair queueing over DRR (the AFQ paper's SFQ baseline, §6.2).
    Sfq {
        limit_packets: Option<u32>,
        limit_bytes: Option<Bytes>,
        /// Hash buckets (default 32, §6.2).
        #[serde(default = "default_afq_queues")]
        queues: u32,
        /// DRR bytes per bucket per turn (default 1500 B).
        #[serde(default = "default_quantum")]
        quantum: Bytes,
        /// `"longest"` (default) or `"tail"`: what a full buffer drops.
        #[serde(default = "default_sfq_drop")]
        drop: String,
    },
    /// Ideal fair queueing: bit-by-bit round robin with exact virtual time and
    /// push-out of the largest bid (the AFQ paper's Ideal-FQ, §6.2).
    IdealFq {
        limit_packets: Option<u32>,
        limit_bytes: Option<Bytes>,
    },
}

fn default_afq_queues() -> u32 {
    32
}
fn default_bids() -> String {
    "sketch".into()
}
fn default_round_of() -> String {
    "floor".into()
}
fn default_afq_ecn() -> String {
    "per_flow".into()
}
fn default_scheduler() -> String {
    "rsp".into()
}
fn default_sfq_drop() -> String {
    "longest".into()
}

/// The paper's simulated sketch: 2 x 16384 (§6.2).
const DEFAULT_SKETCH_ROWS: u32 = 2;
const DEFAULT_SKETCH_COLUMNS: u32 = 16384;
/// Most counters one AFQ port's sketch may hold (32 MiB of u64).
const MAX_SKETCH_CELLS: u64 = 1 << 22;
/// The per-flow marking threshold (§5.2: "8 rounds").
const DEFAULT_ECN_ROUNDS: u32 = 8;
/// The two-group swap period that worked on the Cavium XPliant (§4).
const DEFAULT_TAU: Time = 10 * US;

/// A key that only one value of another key uses: an error naming both.
fn only_with(given: bool, key: &str, needs: &str) -> Result<(), String> {
    if given {
        Err(format!("{key}: only used with {needs}"))
    } else {
        Ok(())
    }
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
    Afq(AfqParams),
    Sfq(Limit, u32, u32, SfqDrop),
    IdealFq(Limit),
}

impl Plan {
    /// Builds the discipline; `seed` seeds its hash functions (SFQ's, AFQ's sketch).
    fn build<S, R>(self, seed: u64) -> Box<dyn QueueDiscipline<S, R>>
    where
        S: PacketStore + 'static,
        R: RngCore + ?Sized + 'static,
    {
        match self {
            Plan::Afq(params) => Box::new(Afq::new(AfqParams { seed, ..params })),
            Plan::Sfq(l, queues, quantum, drop) => {
                Box::new(Sfq::new(l, queues, quantum, drop, seed))
            }
            Plan::IdealFq(l) => Box::new(IdealFq::new(l)),
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
                classes
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| c.build(mix64(seed ^ (i as u64 + 1))))
                    .collect(),
            )),
            Plan::RandomLoss(rate, inner) => Box::new(RandomLoss::new(rate, inner.build(seed))),
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
            QueueSpec::Afq { .. } => Some("drops packets beyond its rounds"),
            QueueSpec::Sfq {
                limit_packets,
                limit_bytes,
                ..
            }
            | QueueSpec::IdealFq {
                limit_packets,
                limit_bytes,
            } if limited(limit_packets, limit_bytes) => Some("has a limit"),
            _ => None,
        }
    }

    /// Bytes the discipline allocates when built, whatever its traffic: an AFQ
    /// port's sketch and FIFOs, an SFQ port's buckets (for the memory estimate).
    pub fn fixed_state_bytes(&self) -> u64 {
        const PER_FIFO: u64 = 64;
        match self {
            QueueSpec::Afq {
                queues,
                bids,
                sketch_rows,
                sketch_columns,
                ..
            } => {
                let cells = if bids == "exact" {
                    0
                } else {
                    u64::from(sketch_rows.unwrap_or(DEFAULT_SKETCH_ROWS))
                        * u64::from(sketch_columns.unwrap_or(DEFAULT_SKETCH_COLUMNS))
                };
                cells * 8 + u64::from(*queues) * PER_FIFO
            }
            QueueSpec::Sfq { queues, .. } => u64::from(*queues) * PER_FIFO,
            QueueSpec::StrictPriority { classes } => {
                classes.iter().map(Self::fixed_state_bytes).sum()
            }
            QueueSpec::RandomLoss { queue, .. } => queue.fixed_state_bytes(),
            _ => 0,
        }
    }

    /// Builds the discipline. Call [`validate`](Self::validate) first.
    pub fn build<S, R>(&self) -> Box<dyn QueueDiscipline<S, R>>
    where
        S: PacketStore + 'static,
        R: RngCore + ?Sized + 'static,
    {
        self.build_seeded(0)
    }

    /// Builds the discipline with `seed` for its hash functions (each port its
    /// own, derived from the run's seed). Call [`validate`](Self::validate) first.
    pub fn build_seeded<S, R>(&self, seed: u64) -> Box<dyn QueueDiscipline<S, R>>
    where
        S: PacketStore + 'static,
        R: RngCore + ?Sized + 'static,
    {
        self.plan()
            .expect("queue specs are validated when the configuration loads")
            .build(seed)
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
            QueueSpec::Afq { .. } => self.plan_afq().map(Plan::Afq),
            QueueSpec::Sfq {
                limit_packets,
                limit_bytes,
                queues,
                quantum,
                drop,
            } => {
                let l = checked_limit(*limit_packets, *limit_bytes)?;
                if *queues == 0 || *queues > 65536 {
                    return Err(format!("queues: must be from 1 to 65536, got {queues}"));
                }
                if quantum.0 == 0 || quantum.0 > u64::from(u32::MAX) {
                    return Err(format!(
                        "quantum: must be from 1 B to 4 GB, got {} B",
                        quantum.0
                    ));
                }
                let drop = match drop.as_str() {
                    "longest" => SfqDrop::Longest,
                    "tail" => SfqDrop::Tail,
                    other => {
                        return Err(format!("drop: `{other}` is not one of `longest`, `tail`"))
                    }
                };
                Ok(Plan::Sfq(l, *queues, quantum.0 as u32, drop))
            }
            QueueSpec::IdealFq {
                limit_packets,
                limit_bytes,
            } => Ok(Plan::IdealFq(checked_limit(*limit_packets, *limit_bytes)?)),
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

impl QueueSpec {
    /// AFQ's keys, checked: each error names its key, and a key that only another
    /// setting uses is refused rather than ignored.
    fn plan_afq(&self) -> Result<AfqParams, String> {
        let QueueSpec::Afq {
            limit_packets,
            limit_bytes,
            queues,
            bytes_per_round,
            bids,
            sketch_rows,
            sketch_columns,
            sketch_update,
            round_of,
            ecn,
            ecn_rounds,
            ecn_k_packets,
            ecn_k_bytes,
            scheduler,
            drr_quantum,
            tau,
            count_misqueued,
        } = self
        else {
            unreachable!("called on AFQ only")
        };
        let limit = checked_limit(*limit_packets, *limit_bytes)?;
        if !(1..=MAX_QUEUES).contains(queues) {
            return Err(format!(
                "queues: must be from 1 to {MAX_QUEUES}, got {queues}"
            ));
        }
        if bytes_per_round.0 == 0 || bytes_per_round.0 > u64::from(u32::MAX) {
            return Err(format!(
                "bytes_per_round: must be from 1 B to 4 GB, got {} B",
                bytes_per_round.0
            ));
        }
        let sketch = match bids.as_str() {
            "sketch" => {
                let rows = sketch_rows.unwrap_or(DEFAULT_SKETCH_ROWS);
                let columns = sketch_columns.unwrap_or(DEFAULT_SKETCH_COLUMNS);
                if rows == 0 || rows as usize > MAX_ROWS {
                    return Err(format!(
                        "sketch_rows: must be from 1 to {MAX_ROWS}, got {rows}"
                    ));
                }
                if columns == 0 {
                    return Err("sketch_columns: must be at least 1".into());
                }
                if u64::from(rows) * u64::from(columns) > MAX_SKETCH_CELLS {
                    return Err(format!(
                        "sketch_columns: {rows} x {columns} counters is more than the \
                         {MAX_SKETCH_CELLS} a port may hold"
                    ));
                }
                let update = match sketch_update.as_deref().unwrap_or("max") {
                    "max" => SketchUpdate::Max,
                    "increment" => SketchUpdate::Increment,
                    other => {
                        return Err(format!(
                            "sketch_update: `{other}` is not one of `max`, `increment`"
                        ))
                    }
                };
                Some((rows, columns, update))
            }
            "exact" => {
                only_with(sketch_rows.is_some(), "sketch_rows", "bids = \"sketch\"")?;
                only_with(
                    sketch_columns.is_some(),
                    "sketch_columns",
                    "bids = \"sketch\"",
                )?;
                only_with(
                    sketch_update.is_some(),
                    "sketch_update",
                    "bids = \"sketch\"",
                )?;
                only_with(*count_misqueued, "count_misqueued", "bids = \"sketch\"")?;
                None
            }
            other => return Err(format!("bids: `{other}` is not one of `sketch`, `exact`")),
        };
        let round_of = match round_of.as_str() {
            "floor" => RoundOf::Floor,
            "last_byte" => RoundOf::LastByte,
            other => {
                return Err(format!(
                    "round_of: `{other}` is not one of `floor`, `last_byte`"
                ))
            }
        };
        let ecn = match ecn.as_str() {
            "per_flow" => {
                only_with(ecn_k_packets.is_some(), "ecn_k_packets", "ecn = \"port\"")?;
                only_with(ecn_k_bytes.is_some(), "ecn_k_bytes", "ecn = \"port\"")?;
                AfqEcn::PerFlow {
                    rounds: u64::from(ecn_rounds.unwrap_or(DEFAULT_ECN_ROUNDS)),
                }
            }
            "port" => {
                only_with(ecn_rounds.is_some(), "ecn_rounds", "ecn = \"per_flow\"")?;
                let (k, in_packets) = one_of(*ecn_k_packets, *ecn_k_bytes, "ecn_k")
                    .map_err(|e| format!("ecn = \"port\" {e}"))?;
                AfqEcn::Port { k, in_packets }
            }
            "off" => {
                only_with(ecn_rounds.is_some(), "ecn_rounds", "ecn = \"per_flow\"")?;
                only_with(ecn_k_packets.is_some(), "ecn_k_packets", "ecn = \"port\"")?;
                only_with(ecn_k_bytes.is_some(), "ecn_k_bytes", "ecn = \"port\"")?;
                AfqEcn::Off
            }
            other => {
                return Err(format!(
                    "ecn: `{other}` is not one of `per_flow`, `port`, `off`"
                ))
            }
        };
        if !matches!(scheduler.as_str(), "drr") {
            only_with(drr_quantum.is_some(), "drr_quantum", "scheduler = \"drr\"")?;
        }
        if !matches!(scheduler.as_str(), "two_groups") {
            only_with(tau.is_some(), "tau", "scheduler = \"two_groups\"")?;
        }
        let scheduler = match scheduler.as_str() {
            "rsp" => RspVariant::Ideal,
            "rmt" => RspVariant::RmtEstimate,
            "drr" => {
                // More than any round can hold: the whole buffer, or, unlimited, as
                // good as infinite.
                let quantum = match (drr_quantum, limit.bytes, limit.packets) {
                    (Some(q), _, _) => q.0,
                    (None, Some(b), _) => b,
                    (None, None, Some(p)) => u64::from(p) * 65_536,
                    (None, None, None) => u64::MAX / 2,
                };
                if quantum == 0 {
                    return Err("drr_quantum: must be at least 1 B".into());
                }
                RspVariant::Drr { quantum }
            }
            "two_groups" => {
                if *queues < 2 || queues % 2 != 0 {
                    return Err(format!(
                        "queues: scheduler = \"two_groups\" splits the queues into two \
                         equal groups, so it needs an even number, got {queues}"
                    ));
                }
                let tau = tau.map_or(DEFAULT_TAU, |t| t.0);
                if tau == 0 {
                    return Err("tau: must be positive".into());
                }
                RspVariant::TwoGroups { tau }
            }
            other => {
                return Err(format!(
                    "scheduler: `{other}` is not one of `rsp`, `drr`, `two_groups`, `rmt`"
                ))
            }
        };
        Ok(AfqParams {
            limit,
            queues: *queues,
            bytes_per_round: bytes_per_round.0,
            sketch,
            round_of,
            ecn,
            scheduler,
            count_misqueued: *count_misqueued,
            seed: 0,
        })
    }
}
