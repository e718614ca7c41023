//! What this machine's memory costs a large simulation, measured the way a run meets
//! it: loads at random over a footprint far beyond the caches, on huge pages, with
//! the simulator's allocator and options.
//!
//! ```text
//! cargo run --release -p eqds-sim --example memory_model
//! ```
//!
//! Three tables:
//! - **latency**: one chain of dependent loads over footprints from 1 MiB to 512 MiB,
//!   the cost of a miss that nothing overlaps;
//! - **throughput**: several independent chains over 256 MiB, interleaved, as a
//!   simulator's prefetching overlaps its misses: the rate at which one core can
//!   bring lines from memory when it keeps that many loads in flight;
//! - **nodes**: 16 chains whose every step reads a node of 1 to 8 adjacent lines, the
//!   cost of state kept together against state scattered over separate lines;
//! - **pages**: the same 8 MiB of lines packed, or spread one to every 512 B or 4 KiB,
//!   alone and 16 in flight: what a line costs for being on a page of its own (a
//!   TLB miss, which under a hypervisor is a nested page walk) rather than for being
//!   a line.
//!
//! BENCHMARKS.md ("Per-event cost against network size", third pass) reads a k=32
//! run's events/s against these: a run bound by memory spends about one full
//! throughput slot per line an event must bring in.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One cache line. A node's first line holds the index of the next node's first.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Line([usize; 8]);

const MIB: usize = 1 << 20;

/// `bytes` of lines linked, node by node (`node_lines` lines each), into one cycle
/// in random order.
fn cycle(bytes: usize, node_lines: usize, rng: &mut ChaCha8Rng) -> Vec<Line> {
    let nodes = bytes / 64 / node_lines;
    let mut order: Vec<usize> = (0..nodes).collect();
    order.shuffle(rng);
    let mut lines = vec![Line::default(); nodes * node_lines];
    for (i, &node) in order.iter().enumerate() {
        let next = order[(i + 1) % nodes];
        lines[node * node_lines].0[0] = next * node_lines;
        for l in 1..node_lines {
            lines[node * node_lines + l].0[0] = l;
        }
    }
    lines
}

/// Nanoseconds per node visited: `chains` walks of the cycle, from starts spread
/// over it, advanced in turn so that their loads overlap; each visit reads every line
/// of its node.
fn walk(lines: &[Line], node_lines: usize, chains: usize, visits: usize) -> f64 {
    let nodes = lines.len() / node_lines;
    let mut at: Vec<usize> = (0..chains)
        .map(|c| c * (nodes / chains) * node_lines)
        .collect();
    let steps = visits / chains;
    let start = Instant::now();
    let mut sum = 0usize;
    for _ in 0..steps {
        for p in at.iter_mut() {
            let node = &lines[*p..*p + node_lines];
            for line in &node[1..] {
                sum = sum.wrapping_add(line.0[0]);
            }
            *p = node[0].0[0];
        }
    }
    black_box(sum);
    start.elapsed().as_secs_f64() * 1e9 / (steps * chains) as f64
}

/// `n` lines linked into one cycle in random order, line `i` placed at a random line
/// of the `stride` bytes from `i * stride`; with the index of each line's first.
fn spread(n: usize, stride: usize, rng: &mut ChaCha8Rng) -> (Vec<Line>, Vec<usize>) {
    let per = stride / 64;
    let at: Vec<usize> = (0..n)
        .map(|i| i * per + rand::Rng::random_range(&mut *rng, 0..per))
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(rng);
    let mut lines = vec![Line::default(); n * per];
    for (k, &i) in order.iter().enumerate() {
        lines[at[i]].0[0] = at[order[(k + 1) % n]];
    }
    let starts = order.iter().map(|&i| at[i]).collect();
    (lines, starts)
}

/// Nanoseconds per load: `chains` walks of a cycle from `spread`, from starts spread
/// over it, advanced in turn.
fn walk_spread(lines: &[Line], starts: &[usize], chains: usize, loads: usize) -> f64 {
    let mut at: Vec<usize> = (0..chains)
        .map(|c| starts[c * (starts.len() / chains)])
        .collect();
    let steps = loads / chains;
    let start = Instant::now();
    for _ in 0..steps {
        for p in at.iter_mut() {
            *p = lines[*p].0[0];
        }
    }
    black_box(&at);
    start.elapsed().as_secs_f64() * 1e9 / (steps * chains) as f64
}

fn main() {
    eqds_sim::memory::configure_allocator();
    let mut rng = ChaCha8Rng::seed_from_u64(1);

    println!("latency: one chain of dependent loads");
    println!("| footprint | ns per load |");
    println!("|---|---|");
    for mib in [1, 4, 16, 32, 64, 128, 256, 512] {
        let lines = cycle(mib * MIB, 1, &mut rng);
        println!("| {mib} MiB | {:.1} |", walk(&lines, 1, 1, 2_000_000));
    }

    let lines = cycle(256 * MIB, 1, &mut rng);
    println!("\nthroughput: independent chains over 256 MiB");
    println!("| loads in flight | ns per load | M lines/s |");
    println!("|---|---|---|");
    for chains in [1, 2, 4, 8, 12, 16, 24, 32] {
        let ns = walk(&lines, 1, chains, 2_000_000 * chains.min(8));
        println!("| {chains} | {ns:.1} | {:.0} |", 1e3 / ns);
    }
    drop(lines);

    println!("\nnodes: 16 chains over 512 MiB, each visit reading a node of adjacent lines");
    println!("| node | ns per node | against one line |");
    println!("|---|---|---|");
    let mut one = 0.0;
    for node_lines in [1, 2, 4, 8] {
        let lines = cycle(512 * MIB, node_lines, &mut rng);
        let ns = walk(&lines, node_lines, 16, 16_000_000);
        if node_lines == 1 {
            one = ns;
        }
        println!(
            "| {} B ({node_lines} lines) | {ns:.1} | {:.2}x |",
            64 * node_lines,
            ns / one
        );
    }

    println!("\npages: 8 MiB of lines (131,072), packed or one to every 512 B or 4 KiB");
    println!("| placement | span | ns per load, alone | ns per load, 16 in flight |");
    println!("|---|---|---|---|");
    for stride in [64, 512, 4096] {
        let (lines, starts) = spread(131_072, stride, &mut rng);
        let alone = walk_spread(&lines, &starts, 1, 2_000_000);
        let overlapped = walk_spread(&lines, &starts, 16, 16_000_000);
        let place = if stride == 64 {
            "packed".to_string()
        } else {
            format!("one per {stride} B")
        };
        println!(
            "| {place} | {} MiB | {alone:.1} | {overlapped:.1} |",
            131_072 * stride / MIB
        );
    }
}
