// SPDX-License-Identifier: GPL-2.0

//! Section 4: the context scheduler's slot selection and time slices
//! (`vgsched_core::slots`).
//!
//! Three tables, all driven by the core crate's `reschedule`, the function
//! the kernel's engine calls:
//!
//! 1. fairness: Jain's index of the GPU time that contexts of one level,
//!    all with endless work, receive over a window of modeled time, under
//!    the `proportional` and `literal` slice formulas and under a FIFO
//!    baseline implemented here (slots in arrival order, kept while there is
//!    work, so forever);
//! 2. how long a priority-0 submission waits for its first dispatch while
//!    priority-5 contexts hold the slots: the decision is a real, timed
//!    `reschedule` call, the rest (waves running on to the next preemption
//!    point, then being saved) is modeled;
//! 3. the CPU cost of one decision as the number of contexts grows.
//!
//! The model of the engine: residents (contexts holding one of the `L`
//! slots) run side by side, so each resident's runtime grows by the time
//! elapsed; the others wait. A decision is taken whenever a slice ends or a
//! context arrives, as the engine does. Switching costs are left out of the
//! fairness table: they delay work but are not runtime, and the question
//! there is who gets the GPU, not how much of it switching wastes.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

use vgsched_core::context_switch::{
    shared_state_bytes,
    transfer_cycles,
    wave_state_bytes, //
};
use vgsched_core::kinetic::Node;
use vgsched_core::occupancy::{
    GroupNeeds,
    WaveNeeds, //
};
use vgsched_core::ordered_slots::{
    OrderedSlots,
    Picked,
    Store, //
};
use vgsched_core::pool::{
    div_sat,
    Candidate, //
};
use vgsched_core::rng::Rng;
use vgsched_core::slice::SliceFormula;
use vgsched_core::slots::{
    next_slice_end,
    reschedule,
    Scratch,
    SlotChange,
    SlotCounters,
    SlotEntry,
    SlotPolicy, //
};
use vgsched_core::topology::Topology;

use crate::Options;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

/// Hardware slots `L` (`Topology::DEFAULT.hw_slots`).
const SLOTS: usize = 8;
/// Base slice `t0` (`Topology::DEFAULT.time_slice_us`).
const T0_NS: u64 = 10 * MS;
/// Where the modeled clock starts: contexts that ran before the scenario
/// were created up to this long before it, and creation times cannot be
/// negative.
const ORIGIN_NS: u64 = 10 * SEC;
/// Contexts arrive (get their endless work) over this span after the origin.
const ARRIVALS_NS: u64 = SEC;
/// Measurements start once every context has arrived.
const WINDOW_START_NS: u64 = ORIGIN_NS + ARRIVALS_NS;
/// Length of the measurement window (divided by ten with `--quick`).
const WINDOW_NS: u64 = 10 * SEC;

/// Context counts of the fairness and latency tables.
const COUNTS: [usize; 4] = [2, 8, 32, 128];
/// Context counts of the cost table.
const COST_COUNTS: [usize; 8] = [2, 8, 32, 128, 512, 1024, 2048, 4096];

/// Preemption grids of the latency table, in µs: the default and the least
/// `preemption_us` accepts.
const PREEMPTION_US: [u64; 2] = [1000, 100];
/// Submission times drawn per row of the latency table.
const SUBMISSIONS: u64 = 10_000;
/// Decisions timed per row of the cost table (fewer for large counts).
const COST_DECISIONS: u64 = 20_000;

/// The waves filling the device in the latency table: 64 threads, 8 vector
/// and 2 scalar register blocks, groups with 4 shared-memory blocks.
const WAVE: GroupNeeds = GroupNeeds {
    waves: 1,
    wave: WaveNeeds { vgpr: 8, sgpr: 2 },
    shared: 4,
};
/// Threads of each of those waves.
const WAVE_THREADS: u32 = 64;

/// Time to save the first wave of a group of [`WAVE`]s, the slowest of its
/// waves as it also carries the shared memory, as the engine charges it
/// (`vgsched_core::context_switch`) at the default 1 MHz clock. Waves are
/// saved in parallel (each from its own preemption point), so this is when
/// the last of them has freed its room.
fn wave_save_ns() -> u64 {
    let bytes = wave_state_bytes(&WAVE, WAVE_THREADS) + shared_state_bytes(&WAVE);
    Topology::DEFAULT.cycles_to_ns(transfer_cycles(bytes))
}

/// One context of the model.
#[derive(Clone, Copy)]
struct Ctx {
    entry: SlotEntry,
    /// When it gets its endless work (becomes runnable).
    arrive_ns: u64,
    /// GPU time received inside the measurement window.
    window_ns: u64,
}

impl AsRef<SlotEntry> for Ctx {
    fn as_ref(&self) -> &SlotEntry {
        &self.entry
    }
}

impl AsMut<SlotEntry> for Ctx {
    fn as_mut(&mut self) -> &mut SlotEntry {
        &mut self.entry
    }
}

/// `n` contexts at `priority`, arriving at random times over
/// [`ARRIVALS_NS`] after the origin. One in four is older: created 1 to
/// 10 s before it arrives, it ran before at 0.5 to 1.5 times the fair rate
/// of this load (`min(1, L/n)` of its lifetime), so weights start unequal
/// both ways. The others are created when they arrive and never ran.
fn scenario(n: usize, priority: u8, rng: &mut Rng) -> Vec<Ctx> {
    let fair_milli = (SLOTS as u64 * 1000 / n as u64).min(1000);
    (0..n)
        .map(|i| {
            let arrive_ns = ORIGIN_NS + rng.below_u64(ARRIVALS_NS);
            let (created_ns, runtime_ns) = if rng.below(4) == 0 {
                let age = SEC + rng.below_u64(9 * SEC);
                let u_milli = 500 + rng.below(1001) as u64;
                (arrive_ns - age, age * fair_milli / 1000 * u_milli / 1000)
            } else {
                (arrive_ns, 0)
            };
            let cand = Candidate {
                id: i as u32,
                priority,
                created_ns,
                runtime_ns,
                runnable: false,
                served_pass: 0,
            };
            Ctx {
                entry: SlotEntry::new(cand),
                arrive_ns,
                window_ns: 0,
            }
        })
        .collect()
}

/// `reschedule`'s settings and scratch, kept between calls as the engine
/// keeps them.
struct Decider {
    policy: SlotPolicy,
    seq: SlotCounters,
    cands: Vec<Candidate>,
    chosen: Vec<usize>,
    changes: Vec<SlotChange>,
}

impl Decider {
    fn new(n: usize, formula: SliceFormula) -> Self {
        let blank = Candidate {
            id: 0,
            priority: 0,
            created_ns: 0,
            runtime_ns: 0,
            runnable: false,
            served_pass: 0,
        };
        Self {
            policy: SlotPolicy::new(SLOTS, formula, T0_NS),
            seq: SlotCounters::new(),
            cands: vec![blank; n],
            chosen: vec![0; SLOTS],
            // Each resident is evicted at most once, each slot filled at
            // most once: 2L changes at most.
            changes: vec![
                SlotChange::Evict {
                    index: 0,
                    preempted: false
                };
                2 * SLOTS
            ],
        }
    }

    /// One decision at `now`; returns the changes.
    fn decide(&mut self, ctxs: &mut [Ctx], now: u64) -> &[SlotChange] {
        let scratch = Scratch {
            cands: &mut self.cands,
            chosen: &mut self.chosen,
            changes: &mut self.changes,
        };
        let k = reschedule(ctxs, now, &self.policy, &mut self.seq, scratch);
        &self.changes[..k]
    }
}

/// Credits every resident the time from `from` to `to`: its runtime, and
/// the part inside `[win_start, win_end)` to its window share.
fn credit(ctxs: &mut [Ctx], from: u64, to: u64, win_start: u64, win_end: u64) {
    let in_window = to.min(win_end).saturating_sub(from.max(win_start));
    for c in ctxs.iter_mut().filter(|c| c.entry.resident) {
        c.entry.cand.runtime_ns += to - from;
        c.window_ns += in_window;
    }
}

/// Indices of `ctxs` by arrival time.
fn arrival_order(ctxs: &[Ctx]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ctxs.len()).collect();
    order.sort_by_key(|&i| (ctxs[i].arrive_ns, i));
    order
}

/// A scheduling policy of the fairness table.
#[derive(Clone, Copy)]
enum Policy {
    /// The core crate's `reschedule` with this slice formula.
    Core(SliceFormula),
    /// Slots in arrival order, kept while there is work.
    Fifo,
}

/// What one fairness run measured.
struct Fairness {
    jain: f64,
    min_share: f64,
    max_share: f64,
    /// Contexts loaded into a slot per second of the window (switches).
    loads_per_s: f64,
    /// Largest over smallest weight (lifetime ÷ runtime) at the end: how
    /// far the scheduler is from its own notion of fairness, runtime in
    /// proportion to lifetime. Infinite if a context never ran.
    weight_spread: f64,
}

/// Runs `ctxs` (all at one level, endless work) under `policy` from the
/// first arrival to the end of a window of `window_ns`, event by event:
/// arrivals and slice ends.
fn run_fairness(mut ctxs: Vec<Ctx>, policy: Policy, window_ns: u64) -> Fairness {
    let win_end = WINDOW_START_NS + window_ns;
    let order = arrival_order(&ctxs);
    let mut decider = Decider::new(ctxs.len(), SliceFormula::Proportional);
    if let Policy::Core(f) = policy {
        decider.policy.formula = f;
    }
    let (mut next, mut loads, mut resident) = (0, 0u64, 0);
    let mut now = ctxs[order[0]].arrive_ns;
    while now < win_end {
        while next < order.len() && ctxs[order[next]].arrive_ns <= now {
            ctxs[order[next]].entry.cand.runnable = true;
            next += 1;
        }
        let loaded = match policy {
            Policy::Core(_) => {
                let changes = decider.decide(&mut ctxs, now);
                changes
                    .iter()
                    .filter(|c| matches!(c, SlotChange::Load { .. }))
                    .count()
            }
            Policy::Fifo => {
                // Arrivals take free slots in order; nobody ever leaves.
                let before = resident;
                for &i in &order[..next] {
                    if resident < SLOTS && !ctxs[i].entry.resident {
                        ctxs[i].entry.resident = true;
                        ctxs[i].entry.slice_end_ns = u64::MAX;
                        resident += 1;
                    }
                }
                resident - before
            }
        };
        if now >= WINDOW_START_NS {
            loads += loaded as u64;
        }
        let arrival = order.get(next).map_or(u64::MAX, |&i| ctxs[i].arrive_ns);
        let to = next_slice_end(&ctxs)
            .unwrap_or(u64::MAX)
            .min(arrival)
            .min(win_end);
        credit(&mut ctxs, now, to, WINDOW_START_NS, win_end);
        now = to;
    }
    let x: Vec<f64> = ctxs.iter().map(|c| c.window_ns as f64).collect();
    let (sum, sum_sq) = (x.iter().sum::<f64>(), x.iter().map(|v| v * v).sum::<f64>());
    let fair = sum / x.len() as f64;
    let weights = ctxs.iter().map(|c| {
        let e = &c.entry.cand;
        (win_end - e.created_ns) as f64 / e.runtime_ns as f64
    });
    let (w_min, w_max) = weights.fold((f64::MAX, 0.0f64), |(lo, hi), w| (lo.min(w), hi.max(w)));
    Fairness {
        jain: sum * sum / (x.len() as f64 * sum_sq),
        min_share: x.iter().copied().fold(f64::MAX, f64::min) / fair,
        max_share: x.iter().copied().fold(0.0, f64::max) / fair,
        loads_per_s: loads as f64 * SEC as f64 / window_ns as f64,
        weight_spread: w_max / w_min,
    }
}

fn fairness_table(out: &mut String, opts: &Options) {
    let window_ns = WINDOW_NS / opts.scale;
    let _ = writeln!(out, "Context scheduler fairness: Jain's index J of GPU time, one priority level, L = {SLOTS} slots, t0 = {} ms", T0_NS / MS);
    let _ = writeln!(out, "  n contexts with endless work arrive at random times over the first {} s; 1 in 4 is older (created 1-10 s", ARRIVALS_NS / SEC);
    let _ = writeln!(out, "  earlier, ran 0.5-1.5x the fair rate min(1, L/n) of its lifetime), the rest never ran. GPU time counted over");
    let _ = writeln!(out, "  {} s of modeled time after the last arrival (at n = 128: {} t0 of fair share each); switch costs not charged.", window_ns / SEC, window_ns * SLOTS as u64 / 128 / T0_NS);
    let _ = writeln!(out, "  share = a context's GPU time / the mean (1 = fair); loads/s = contexts loaded into a slot per second;");
    let _ = writeln!(out, "  w m/m = largest / smallest weight (lifetime / runtime) at the end, 1 when runtime follows lifetime");
    let _ = writeln!(
        out,
        "  FIFO = slots in arrival order, kept while there is work (forever here)"
    );
    let _ = writeln!(
        out,
        "{:>5} | {:>6} {:>9} {:>7} {:>5} | {:>6} {:>9} {:>7} {:>5} | {:>6} {:>10}",
        "n",
        "J prop",
        "min/max",
        "loads/s",
        "w m/m",
        "J lit",
        "min/max",
        "loads/s",
        "w m/m",
        "J FIFO",
        "min/max"
    );
    let share = |f: &Fairness| format!("{:.2}/{:.2}", f.min_share, f.max_share);
    for n in COUNTS {
        let ctxs = scenario(n, 6, &mut Rng::new(0xfa1e_0000 + n as u64));
        let p = run_fairness(
            ctxs.clone(),
            Policy::Core(SliceFormula::Proportional),
            window_ns,
        );
        let l = run_fairness(ctxs.clone(), Policy::Core(SliceFormula::Literal), window_ns);
        let f = run_fairness(ctxs, Policy::Fifo, window_ns);
        let _ = writeln!(
            out,
            "{:>5} | {:>6.4} {:>9} {:>7.0} {:>5.2} | {:>6.4} {:>9} {:>7.0} {:>5.2} | {:>6.4} {:>10}",
            n,
            p.jain,
            share(&p),
            p.loads_per_s,
            p.weight_spread,
            l.jain,
            share(&l),
            l.loads_per_s,
            l.weight_spread,
            f.jain,
            share(&f)
        );
    }
}

/// The `q`-quantile of `v` (sorted in place).
fn quantile(v: &mut [u64], q: f64) -> u64 {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// Median ns of an empty timed interval: what reading the clock twice adds
/// to every per-call figure.
fn clock_overhead_ns() -> u64 {
    let mut v: Vec<u64> = (0..10_000)
        .map(|_| {
            let t = Instant::now();
            t.elapsed().as_nanos() as u64
        })
        .collect();
    quantile(&mut v, 0.5)
}

/// The first preemption point strictly after `ns` on a grid of `grid_ns`,
/// as `SchedParams::next_point` computes it.
fn next_point(ns: u64, grid_ns: u64) -> u64 {
    (ns / grid_ns + 1) * grid_ns
}

fn latency_table(out: &mut String, opts: &Options) {
    let save_ns = wave_save_ns();
    let samples = opts.count(SUBMISSIONS);
    let (t, v, s, sh) = (WAVE_THREADS, WAVE.wave.vgpr, WAVE.wave.sgpr, WAVE.shared);
    let _ = writeln!(out, "Priority-0 submission to first dispatch: n contexts of priority 5 (endless work, proportional) hold the");
    let _ = writeln!(out, "  L = {SLOTS} slots; a priority-0 context becomes runnable at a random time ({samples} times over {} s of steady state).", WINDOW_NS / SEC);
    let _ = writeln!(out, "  measured: the decision, one real reschedule() call (host, release build; ns include the clock read);");
    let _ = writeln!(out, "  modeled, device full: evicted waves run on to the next preemption point, then are saved in parallel;");
    let _ = writeln!(out, "  the slowest, a group's first wave ({t} threads, {v} vgpr + {s} sgpr blocks, {sh} shared blocks), takes {} us", save_ns / US);
    let _ = writeln!(out, "  at 64 B/cycle, 1 MHz. first dispatch = wait for the point + save, in us (the decision's few us not added).");
    let _ = writeln!(
        out,
        "{:>5} {:>6} {:>8} {:>9} {:>9} | {:>16} {:>16}",
        "n", "calls", "evicted", "dec ns", "dec p99", "P=1000us mean/max", "P=100us mean/max"
    );
    for n in COUNTS {
        let mut rng = Rng::new(0x1a7e_0000 + n as u64);
        let mut ctxs = scenario(n, 5, &mut rng);
        // The priority-0 context, created at the origin, idle until its
        // submission.
        let urgent = ctxs.len();
        let cand = Candidate {
            id: urgent as u32,
            priority: 0,
            created_ns: ORIGIN_NS,
            runtime_ns: 0,
            runnable: false,
            served_pass: 0,
        };
        ctxs.push(Ctx {
            entry: SlotEntry::new(cand),
            arrive_ns: u64::MAX,
            window_ns: 0,
        });
        let mut times: Vec<u64> = (0..samples)
            .map(|_| WINDOW_START_NS + rng.below_u64(WINDOW_NS))
            .collect();
        times.sort_unstable();

        let mut decider = Decider::new(ctxs.len(), SliceFormula::Proportional);
        let order = arrival_order(&ctxs[..n]);
        let (mut next, mut now, mut sample) = (0, ctxs[order[0]].arrive_ns, 0);
        let (mut calls, mut evicted) = (0u64, 0u64);
        let mut dec_ns = Vec::with_capacity(samples as usize);
        let mut wait_ns = [(0u64, 0u64); PREEMPTION_US.len()];
        while sample < times.len() {
            while next < n && ctxs[order[next]].arrive_ns <= now {
                ctxs[order[next]].entry.cand.runnable = true;
                next += 1;
            }
            decider.decide(&mut ctxs, now);
            let arrival = order.get(next).map_or(u64::MAX, |&i| ctxs[i].arrive_ns);
            let to = next_slice_end(&ctxs).unwrap_or(u64::MAX).min(arrival);
            // Submissions before the next event see this state, advanced.
            while sample < times.len() && times[sample] < to {
                let at = times[sample];
                let mut copy = ctxs.clone();
                credit(&mut copy, now, at, 0, 0);
                copy[urgent].entry.cand.runnable = true;
                let mut seq = decider.seq;
                // Decide until it holds a slot (the model says: at once).
                while !copy[urgent].entry.resident {
                    let scratch = Scratch {
                        cands: &mut decider.cands,
                        chosen: &mut decider.chosen,
                        changes: &mut decider.changes,
                    };
                    let start = Instant::now();
                    let k = reschedule(&mut copy, at, &decider.policy, &mut seq, scratch);
                    dec_ns.push(start.elapsed().as_nanos() as u64);
                    calls += 1;
                    evicted += decider.changes[..k]
                        .iter()
                        .filter(|c| {
                            matches!(
                                c,
                                SlotChange::Evict {
                                    preempted: true,
                                    ..
                                }
                            )
                        })
                        .count() as u64;
                }
                for (w, grid_us) in wait_ns.iter_mut().zip(PREEMPTION_US) {
                    let wait = next_point(at, grid_us * US) - at + save_ns;
                    w.0 += wait;
                    w.1 = w.1.max(wait);
                }
                sample += 1;
            }
            credit(&mut ctxs, now, to, 0, 0);
            now = to;
        }
        let cell = |w: (u64, u64)| {
            format!(
                "{:.0}/{:.0}",
                w.0 as f64 / samples as f64 / US as f64,
                w.1 as f64 / US as f64
            )
        };
        let _ = writeln!(
            out,
            "{:>5} {:>6.2} {:>8.2} {:>9} {:>9} | {:>16} {:>16}",
            n,
            calls as f64 / samples as f64,
            evicted as f64 / samples as f64,
            quantile(&mut dec_ns, 0.5),
            quantile(&mut dec_ns, 0.99),
            cell(wait_ns[0]),
            cell(wait_ns[1])
        );
    }
}

fn cost_table(out: &mut String, opts: &Options) {
    let overhead = clock_overhead_ns();
    let _ = writeln!(out, "Cost of one scheduling decision (reschedule(), host, release build), L = {SLOTS}, proportional, one level");
    let _ = writeln!(out, "  steady state of the fairness scenario (all arrived, every context ran), one decision per slice end;");
    let _ = writeln!(out, "  each call timed alone, minus the clock's own {overhead} ns (median of an empty timed interval)");
    let _ = writeln!(
        out,
        "{:>5} {:>9} {:>11} {:>10} {:>10} {:>10}",
        "n", "decisions", "ends/dec", "median ns", "mean ns", "ns/context"
    );
    let mut median_of = [0u64; COST_COUNTS.len()];
    for (row, n) in COST_COUNTS.into_iter().enumerate() {
        let decisions =
            opts.count((COST_DECISIONS * 128 / n as u64).clamp(2_000, COST_DECISIONS)) as usize;
        let mut ctxs = scenario(n, 6, &mut Rng::new(0xc057_0000 + n as u64));
        for c in &mut ctxs {
            c.entry.cand.runnable = true;
        }
        let mut decider = Decider::new(n, SliceFormula::Proportional);
        // Warm up until every context has held a slot, so no weight is
        // infinite and the slices are desynchronised.
        let mut now = WINDOW_START_NS;
        let mut warm = 0;
        while ctxs.iter().any(|c| c.entry.cand.runtime_ns == 0) || warm < 2 * n {
            decider.decide(&mut ctxs, now);
            let to = next_slice_end(&ctxs).unwrap();
            credit(&mut ctxs, now, to, 0, 0);
            now = to;
            warm += 1;
        }
        let (mut ns, mut ends) = (Vec::with_capacity(decisions), 0);
        for _ in 0..decisions {
            ends += ctxs
                .iter()
                .filter(|c| c.entry.resident && c.entry.slice_end_ns <= now)
                .count();
            let scratch = Scratch {
                cands: &mut decider.cands,
                chosen: &mut decider.chosen,
                changes: &mut decider.changes,
            };
            let start = Instant::now();
            reschedule(&mut ctxs, now, &decider.policy, &mut decider.seq, scratch);
            ns.push((start.elapsed().as_nanos() as u64).saturating_sub(overhead));
            let to = next_slice_end(&ctxs).unwrap();
            credit(&mut ctxs, now, to, 0, 0);
            now = to;
        }
        let mean = ns.iter().sum::<u64>() as f64 / decisions as f64;
        let median = quantile(&mut ns, 0.5);
        median_of[row] = median;
        let _ = writeln!(
            out,
            "{:>5} {:>9} {:>11.2} {:>10} {:>10.0} {:>10.2}",
            n,
            decisions,
            ends as f64 / decisions as f64,
            median,
            mean,
            median as f64 / n as f64
        );
    }
    // The slope between the two largest counts, and the division every
    // weight × 1000 and every slice goes through, which makes up most of
    // the fixed part (2 per loaded context and 2 per slice handed out).
    let (a, b) = (COST_COUNTS.len() - 2, COST_COUNTS.len() - 1);
    let slope =
        (median_of[b] as f64 - median_of[a] as f64) / (COST_COUNTS[b] - COST_COUNTS[a]) as f64;
    let _ = writeln!(
        out,
        "  linear in n: {slope:.1} ns per added context between n = {} and {};",
        COST_COUNTS[a], COST_COUNTS[b]
    );
    let _ = writeln!(
        out,
        "  pool::div_sat (one u64 division when both operands fit, else 128 rounds; 2L + 2 calls per decision here): {:.0} ns per call",
        div_sat_ns(opts)
    );
}

/// Mean ns of one `pool::div_sat` call on the operands of a typical weight
/// × 1000 (lifetime of seconds over runtime of a fraction of it).
fn div_sat_ns(opts: &Options) -> f64 {
    let calls = opts.count(1_000_000);
    let mut acc = 0u64;
    let start = Instant::now();
    for i in 0..calls {
        let num = black_box(3 * SEC as u128 * 1000 + i as u128);
        acc ^= div_sat(num, black_box(770 * MS as u128));
    }
    black_box(acc);
    start.elapsed().as_nanos() as f64 / calls as f64
}

/// The section's three tables.
/// Section 4d: the ordered decision (`vgsched_core::ordered_slots`) against
/// the full one (`reschedule`) on the cost table's trace: `n` contexts of
/// one level, all runnable, L = 8, proportional; one decision at every
/// slice end, the residents credited in between. The ordered decision runs
/// the trace first, then the full one replays it and must make the same
/// changes. Each call is timed alone, minus the clock's own overhead,
/// except the first (the ordered decision's first after its reset looks at
/// every context once, as after a context is removed).
fn ordered_table(out: &mut String, opts: &Options) {
    let overhead = clock_overhead_ns();
    let _ = writeln!(out, "Ordered slot decisions: events and a kinetic tournament vs the full reschedule() (host, release build),");
    let _ = writeln!(out, "  L = {SLOTS}, proportional, one level, the cost table's trace; each call timed alone minus {overhead} ns of clock");
    let _ = writeln!(
        out,
        "{:>5} {:>9} {:>11} {:>11} {:>11} {:>11} {:>6}",
        "n", "decisions", "ordered md", "ordered ns", "full md", "full ns", "same"
    );
    let mut first = None;
    let mut last = (0.0, 0.0);
    for n in COST_COUNTS {
        let decisions =
            opts.count((COST_DECISIONS * 128 / n as u64).clamp(2_000, COST_DECISIONS)) as usize;
        let mut ctxs = scenario(n, 6, &mut Rng::new(0xc057_0000 + n as u64));
        for c in &mut ctxs {
            c.entry.cand.runnable = true;
        }
        // Warm up with the full decision until every context ran.
        let mut decider = Decider::new(n, SliceFormula::Proportional);
        decider.changes.resize(2 * n + 2, SlotChange::Round);
        let mut now = WINDOW_START_NS;
        let mut warm = 0;
        while ctxs.iter().any(|c| c.entry.cand.runtime_ns == 0) || warm < 2 * n {
            decider.decide(&mut ctxs, now);
            let to = next_slice_end(&ctxs).unwrap();
            credit(&mut ctxs, now, to, 0, 0);
            now = to;
            warm += 1;
        }
        let (start_ctxs, start_now, start_seq) = (ctxs.clone(), now, decider.seq);
        let cap = n.next_power_of_two();
        let mut leaves = vec![None; cap];
        let mut nodes = vec![Node::EMPTY; 2 * cap];
        let mut pending = vec![0u32; n];
        let mut work = vec![Picked::blank(); n];
        let mut store = Store {
            leaves: &mut leaves,
            nodes: &mut nodes,
            pending: &mut pending,
            work: &mut work,
        };
        let mut ordered = OrderedSlots::new();
        ordered.reset(&mut ctxs, &mut store);
        let mut ns = Vec::with_capacity(decisions);
        let mut made: Vec<Vec<SlotChange>> = Vec::with_capacity(decisions);
        for d in 0..=decisions {
            let scratch = Scratch {
                cands: &mut decider.cands,
                chosen: &mut decider.chosen,
                changes: &mut decider.changes,
            };
            let start = Instant::now();
            let k = match ordered.due(&ctxs, now) {
                true => ordered.decide(
                    &mut ctxs,
                    now,
                    &decider.policy,
                    &mut decider.seq,
                    &mut store,
                    scratch,
                ),
                false => 0,
            };
            // The first, right after the reset, looks at every context.
            if d > 0 {
                ns.push((start.elapsed().as_nanos() as u64).saturating_sub(overhead));
            }
            made.push(decider.changes[..k].to_vec());
            let to = ordered.next_slice_end(&ctxs).unwrap();
            credit(&mut ctxs, now, to, 0, 0);
            now = to;
        }
        let ordered_mean = ns.iter().sum::<u64>() as f64 / decisions as f64;
        let ordered_median = quantile(&mut ns, 0.5);
        // The same trace through the full decision.
        let (mut ctxs, mut now) = (start_ctxs, start_now);
        decider.seq = start_seq;
        let mut same = true;
        ns.clear();
        for (d, want) in made.iter().enumerate() {
            let scratch = Scratch {
                cands: &mut decider.cands,
                chosen: &mut decider.chosen,
                changes: &mut decider.changes,
            };
            let start = Instant::now();
            let k = reschedule(&mut ctxs, now, &decider.policy, &mut decider.seq, scratch);
            if d > 0 {
                ns.push((start.elapsed().as_nanos() as u64).saturating_sub(overhead));
            }
            same &= decider.changes[..k] == want[..];
            let to = next_slice_end(&ctxs).unwrap();
            credit(&mut ctxs, now, to, 0, 0);
            now = to;
        }
        let full_mean = ns.iter().sum::<u64>() as f64 / decisions as f64;
        let full_median = quantile(&mut ns, 0.5);
        first.get_or_insert(ordered_mean);
        last = (ordered_mean, full_mean);
        let _ = writeln!(
            out,
            "{:>5} {:>9} {:>11} {:>11.0} {:>11} {:>11.0} {:>6}",
            n,
            decisions,
            ordered_median,
            ordered_mean,
            full_median,
            full_mean,
            if same { "yes" } else { "NO" }
        );
    }
    let _ = writeln!(
        out,
        "  ordered mean, n = {} over n = {}: {:.2}; full over ordered at n = {}: {:.0}x",
        COST_COUNTS[COST_COUNTS.len() - 1],
        COST_COUNTS[0],
        last.0 / first.unwrap_or(1.0),
        COST_COUNTS[COST_COUNTS.len() - 1],
        last.1 / last.0
    );
}

pub fn report(opts: &Options) -> String {
    let mut out = String::new();
    fairness_table(&mut out, opts);
    out.push('\n');
    latency_table(&mut out, opts);
    out.push('\n');
    cost_table(&mut out, opts);
    out.push('\n');
    ordered_table(&mut out, opts);
    out
}
