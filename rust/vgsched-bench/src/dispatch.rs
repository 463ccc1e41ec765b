// SPDX-License-Identifier: GPL-2.0

//! Section 3: dispatch decisions per second with 16 channels and 16
//! modules, by the very code the kernel's dispatcher calls (core crate):
//! every round matches the head of each channel against every module (the
//! split table rotated by the module's pointer, the resource finder on
//! each unit's register maps and the module's shared memory), picks the
//! winner (bands, rotation windows, selected marks), scores the modules it
//! matches (free resources and recent power) and takes its ranges. Work-
//! groups leave oldest first when nothing fits or the device holds 256 of
//! them, so the device stays full and fragmented. Needs are random: 1–16
//! waves of 2–32 vector and 1–8 scalar blocks, 0–12 shared blocks.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Instant;

use vgsched_core::{
    bitmask::{
        packed_first_runs,
        FinderKind,
        Search,
        PACK_WIDTH, //
    },
    dispatch::{
        pick,
        Candidate,
        MarkUpdate,
        Rotation,
        WindowDebts,
        BANDS, //
    },
    module_choice::{
        choose,
        free_score,
        FreeResources,
        FreeWeights,
        ModuleChoice,
        ModuleScore,
        PowerWindow, //
    },
    occupancy::{
        summary_len,
        CachedMatch,
        GroupNeeds,
        MapLayout,
        Occupancy,
        Placement,
        WaveNeeds, //
    },
    rng::Rng,
    split::RotatingPointer,
    topology::Topology, //
};

use super::Options;

const CHANNELS: usize = 16;
const MODULES: u32 = 16;
/// Work-groups on the device before the oldest is retired anyway.
const MAX_LIVE: usize = 256;

/// What one configuration measured.
struct Measured {
    rounds_per_s: f64,
    dispatches: u64,
    rounds: u64,
    matches_per_round: f64,
    /// Every dispatch: (channel, module, first vector block of wave 0).
    decisions: Vec<(usize, u32, u16)>,
}

fn random_needs(rng: &mut Rng) -> GroupNeeds {
    GroupNeeds {
        waves: 1 + rng.below(16),
        wave: WaveNeeds {
            vgpr: 2 + rng.below(31),
            sgpr: 1 + rng.below(8),
        },
        shared: rng.below(13),
    }
}

/// The oldest work-group on the device leaves, giving back its ranges.
fn retire_oldest(occ: &mut Occupancy<'_>, live: &mut VecDeque<(Placement, GroupNeeds, u64)>) {
    if let Some((p, needs, _)) = live.pop_front() {
        for w in &p.waves[..needs.waves as usize] {
            occ.release_wave(p.module, w, &needs.wave);
        }
        occ.release_shared(p.module, p.shared_start, needs.shared);
    }
}

/// How a round matches heads against modules.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Matching {
    /// Searching the bitmaps.
    Rescan,
    /// From the per-module summaries kept by the occupancy.
    Summaries,
    /// From the summaries, each verdict remembered per channel and module
    /// until the module changes (the engine's way).
    Memo,
}

/// Runs `rounds` rounds, matching as `how` says.
fn measure(choice: ModuleChoice, finder: FinderKind, rounds: u64, how: Matching) -> Measured {
    let summaries = how != Matching::Rescan;
    let topo = Topology {
        modules: MODULES,
        ..Topology::DEFAULT
    };
    let units = topo.units_per_module;
    let mut words = vec![0u64; MapLayout::new(&topo).total_words(&topo)];
    let mut slots = vec![0u32; topo.total_units() as usize];
    let mut pointers = vec![RotatingPointer::new(units); MODULES as usize];
    let mut power = vec![PowerWindow::new(1024); MODULES as usize];
    let mut rng = Rng::new(0x5eed_d15);
    let mut heads: Vec<(GroupNeeds, u8)> = (0..CHANNELS)
        .map(|_| (random_needs(&mut rng), rng.below(BANDS as u32) as u8))
        .collect();
    let mut marks = [[false; BANDS]; CHANNELS];
    let mut live: VecDeque<(Placement, GroupNeeds, u64)> = VecDeque::new();
    let rotation = Rotation::new(15_000);
    let mut debts = WindowDebts::new();
    let cap = FreeResources {
        vgpr: (units * topo.vgpr_blocks) as u64,
        sgpr: (units * topo.sgpr_blocks) as u64,
        shared: topo.shared_mem_blocks as u64,
        waves: (units * topo.wave_slots) as u64,
    };
    let (mut dispatches, mut matches) = (0u64, 0u64);
    let mut wu = [0u8; 64];
    let mut sum = vec![0u16; summary_len(&topo)];
    Occupancy::new(&topo, &mut words, &mut slots)
        .unwrap()
        .with_summaries(&mut sum)
        .summarize();
    let mut gens = vec![0u64; MODULES as usize];
    let mut memo = vec![CachedMatch::EMPTY; CHANNELS * MODULES as usize];
    let mut decisions = Vec::with_capacity(rounds as usize);
    let start = Instant::now();
    for round in 0..rounds {
        // Modeled time: a cycle per round, as in the modeled hardware.
        let now = round;
        let mut occ = Occupancy::new(&topo, &mut words, &mut slots)
            .unwrap()
            .with_finder(finder);
        if summaries {
            occ = occ.with_summaries(&mut sum);
        }
        if how == Matching::Memo {
            occ = occ.with_generations(&mut gens);
        }
        let mut cands = [Candidate {
            band: 0,
            marked: false,
        }; CHANNELS];
        let mut cand_of = [0usize; CHANNELS];
        let mut n = 0;
        let mut waiting = [false; BANDS];
        for (c, (needs, band)) in heads.iter().enumerate() {
            waiting[*band as usize] = true;
            let fits = (0..MODULES).any(|m| match how {
                Matching::Memo => {
                    let e = &mut memo[c * MODULES as usize + m as usize];
                    occ.matches_memo(m, needs, &pointers[m as usize], e)
                }
                Matching::Summaries => occ.matches_at(m, needs, &pointers[m as usize]),
                Matching::Rescan => {
                    pointers[m as usize].wave_units(needs.waves, units, &mut wu);
                    occ.matches(m, needs, &wu)
                }
            });
            if fits {
                cands[n] = Candidate {
                    band: *band,
                    marked: marks[c][*band as usize],
                };
                cand_of[n] = c;
                n += 1;
            }
        }
        matches += n as u64;
        debts.update(&rotation, now, waiting);
        let promoted = debts.promoted(&rotation, now);
        let Some((ci, update)) = pick(&cands[..n], promoted, &mut rng) else {
            // A failed round: the oldest work-group leaves.
            retire_oldest(&mut occ, &mut live);
            continue;
        };
        let c = cand_of[ci];
        let (needs, band) = heads[c];
        if update == MarkUpdate::KeepOnlyWinner {
            marks.iter_mut().for_each(|m| m[band as usize] = false);
        }
        marks[c][band as usize] = true;
        let mut scores = [ModuleScore::default(); MODULES as usize];
        let mut k = 0;
        for m in 0..MODULES {
            let fits = match how {
                Matching::Memo => {
                    let e = &mut memo[c * MODULES as usize + m as usize];
                    occ.matches_memo(m, &needs, &pointers[m as usize], e)
                }
                Matching::Summaries => occ.matches_at(m, &needs, &pointers[m as usize]),
                Matching::Rescan => {
                    pointers[m as usize].wave_units(needs.waves, units, &mut wu);
                    occ.matches(m, &needs, &wu)
                }
            };
            if fits {
                let free = occ.remaining(m);
                power[m as usize].advance(now);
                scores[k] = ModuleScore {
                    module: m,
                    free: free_score(&free, &cap, &FreeWeights::DEFAULT),
                    power: power[m as usize].recent(),
                };
                k += 1;
            }
        }
        let module = choose(choice, &scores[..k]).unwrap();
        pointers[module as usize].wave_units(needs.waves, units, &mut wu);
        let p = occ.try_place(module, &needs, &wu).unwrap();
        occ.take(&p, &needs);
        decisions.push((c, module, p.waves[0].vgpr_start));
        pointers[module as usize].advance(needs.waves, units);
        let token = power[module as usize].start(now, 20 * needs.waves as u64, 200);
        debts.served(band);
        live.push_back((p, needs, token));
        if live.len() > MAX_LIVE {
            retire_oldest(&mut occ, &mut live);
        }
        heads[c] = (random_needs(&mut rng), rng.below(BANDS as u32) as u8);
        dispatches += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    Measured {
        rounds_per_s: rounds as f64 / secs,
        dispatches,
        rounds,
        matches_per_round: matches as f64 / rounds as f64,
        decisions,
    }
}

/// The packed finder against the exact one on the real placement path
/// (`Occupancy::try_place`), on a device of `vgpr` vector and `sgpr`
/// scalar register blocks per unit: random occupancy states reached by
/// placing and releasing, then every state asked the same random
/// placements under both finders. Returns ns per call (packed, exact)
/// and whether every answer agreed.
fn packed_vs_exact(calls: u64, vgpr: u32, sgpr: u32) -> (f64, f64, bool) {
    let topo = Topology {
        modules: 4,
        units_per_module: 4,
        vgpr_blocks: vgpr,
        sgpr_blocks: sgpr,
        wave_slots: 16,
        ..Topology::DEFAULT
    };
    let mut words = vec![0u64; MapLayout::new(&topo).total_words(&topo)];
    let mut slots = vec![0u32; topo.total_units() as usize];
    let mut rng = Rng::new(0x9ac4_e0);
    let mut live: VecDeque<(Placement, GroupNeeds, u64)> = VecDeque::new();
    // A busy device: about half the registers taken.
    for _ in 0..400 {
        let mut occ = Occupancy::new(&topo, &mut words, &mut slots).unwrap();
        let needs = GroupNeeds {
            waves: 1 + rng.below(4),
            wave: WaveNeeds {
                vgpr: 1 + rng.below(12),
                sgpr: 1 + rng.below(8),
            },
            shared: rng.below(4),
        };
        let units: Vec<u8> = (0..needs.waves).map(|_| rng.below(4) as u8).collect();
        if let Some(p) = occ.try_place(rng.below(4), &needs, &units) {
            occ.take(&p, &needs);
            live.push_back((p, needs, 0));
        }
        if live.len() > 24 {
            retire_oldest(&mut occ, &mut live);
        }
    }
    let asks: Vec<(u32, GroupNeeds, [u8; 4])> = (0..1024)
        .map(|_| {
            let needs = GroupNeeds {
                waves: 1 + rng.below(4),
                wave: WaveNeeds {
                    vgpr: 1 + rng.below(16),
                    sgpr: 1 + rng.below(12),
                },
                shared: rng.below(4),
            };
            (
                rng.below(4),
                needs,
                core::array::from_fn(|_| rng.below(4) as u8),
            )
        })
        .collect();
    let mut time = |finder: FinderKind| {
        let occ = Occupancy::new(&topo, &mut words, &mut slots)
            .unwrap()
            .with_finder(finder);
        let mut answers = Vec::with_capacity(asks.len());
        let start = Instant::now();
        for i in 0..calls as usize {
            let (m, needs, units) = &asks[i % asks.len()];
            let p = std::hint::black_box(occ.try_place(*m, needs, units));
            if i < asks.len() {
                answers.push(
                    p.map(|p| (p.shared_start, p.waves[0].vgpr_start, p.waves[0].sgpr_start)),
                );
            }
        }
        (start.elapsed().as_nanos() as f64 / calls as f64, answers)
    };
    let (packed, a) = time(FinderKind::Packed);
    let (exact, b) = time(FinderKind::Exact);
    (packed, exact, a == b)
}

/// The section's table.
pub fn report(opts: &Options) -> String {
    let mut out = String::new();
    let rounds = opts.count(200_000);
    let _ = writeln!(out, "Dispatch decisions per second: {CHANNELS} channels x {MODULES} modules of 4 units (host, release build)");
    let _ = writeln!(out, "(a round = match all heads against all modules, pick, choose a module, take ranges; {rounds} rounds per row)");
    let _ = writeln!(
        out,
        "{:<28} {:>14} {:>12} {:>14} {:>12}",
        "module choice / finder", "rounds/s", "us/round", "dispatched", "matches/rnd"
    );
    let configs = [
        (
            "recent power / exact",
            ModuleChoice::RecentPower,
            FinderKind::Exact,
        ),
        (
            "free resources / exact",
            ModuleChoice::FreeResources,
            FinderKind::Exact,
        ),
        (
            "mixed / exact",
            ModuleChoice::Mixed {
                power_weight: 1,
                free_weight: 1,
            },
            FinderKind::Exact,
        ),
        (
            "recent power / grouped by 4",
            ModuleChoice::RecentPower,
            FinderKind::Grouped { group: 4 },
        ),
        (
            "recent power / sampled",
            ModuleChoice::RecentPower,
            FinderKind::Sampled,
        ),
    ];
    for (name, choice, finder) in configs {
        let m = measure(choice, finder, rounds, Matching::Rescan);
        let _ = writeln!(
            out,
            "{:<28} {:>14.0} {:>12.2} {:>14} {:>12.2}",
            name,
            m.rounds_per_s,
            1e6 / m.rounds_per_s,
            format!(
                "{} ({:.0}%)",
                m.dispatches,
                100.0 * m.dispatches as f64 / m.rounds as f64
            ),
            m.matches_per_round
        );
    }
    // The same trace matched from per-module summaries (kept by every
    // take and release) against rescanning the bitmaps every round.
    let _ = writeln!(out);
    let _ = writeln!(out, "Dispatch round with per-module summaries vs rescanning the bitmaps (recent power / exact, same trace)");
    let _ = writeln!(
        out,
        "{:<12} {:>12} {:>14}",
        "matching", "us/round", "same choices"
    );
    let rescan = measure(
        ModuleChoice::RecentPower,
        FinderKind::Exact,
        rounds,
        Matching::Rescan,
    );
    let kept = measure(
        ModuleChoice::RecentPower,
        FinderKind::Exact,
        rounds,
        Matching::Summaries,
    );
    let memo = measure(
        ModuleChoice::RecentPower,
        FinderKind::Exact,
        rounds,
        Matching::Memo,
    );
    let same = rescan.decisions == kept.decisions && rescan.decisions == memo.decisions;
    for (name, m) in [("rescan", &rescan), ("summaries", &kept), ("memo", &memo)] {
        let _ = writeln!(
            out,
            "{:<12} {:>12.3} {:>14}",
            name,
            1e6 / m.rounds_per_s,
            if same { "yes" } else { "NO" }
        );
    }
    let _ = writeln!(
        out,
        "  rescan over summaries: {:.1}x; rescan over memo: {:.1}x",
        kept.rounds_per_s / rescan.rounds_per_s,
        memo.rounds_per_s / rescan.rounds_per_s
    );
    let (packed, exact, same) = packed_vs_exact(opts.count(1_000_000), 64, 48);
    let _ = writeln!(out);
    let _ = writeln!(out, "Placing on a busy module, packed vs exact finder (try_place, 64 vector + 48 scalar blocks per unit)");
    let _ = writeln!(
        out,
        "{:<12} {:>12} {:>14}",
        "finder", "ns/call", "same answers"
    );
    for (name, ns) in [("packed", packed), ("exact", exact)] {
        let _ = writeln!(
            out,
            "{:<12} {:>12.1} {:>14}",
            name,
            ns,
            if same { "yes" } else { "NO" }
        );
    }
    periods_table(&mut out, opts);
    out
}

/// The time-multiplexed finder's periods at the default sizes (48 shared,
/// 64 scalar and 128 vector blocks): a placement's searches (its shared
/// memory, then the scalar and the vector registers of each unit its
/// waves use) and the passes `packed_first_runs` takes for them, per
/// number of units; then packed against exact on the placement path at
/// those sizes.
fn periods_table(out: &mut String, opts: &Options) {
    let t = Topology::DEFAULT;
    let free = [0u64; 2];
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Time-multiplexed finder at the default sizes ({} shared, {} scalar, {} vector blocks; {PACK_WIDTH}-bit periods)",
        t.shared_mem_blocks, t.sgpr_blocks, t.vgpr_blocks
    );
    let _ = writeln!(out, "{:<8} {:>9} {:>7}", "units", "searches", "passes");
    for units in 1..=t.units_per_module as usize {
        let mut searches = vec![Search {
            map: &free,
            nbits: t.shared_mem_blocks as usize,
            len: 1,
        }];
        for nbits in [t.sgpr_blocks, t.vgpr_blocks] {
            searches.extend((0..units).map(|_| Search {
                map: &free,
                nbits: nbits as usize,
                len: 1,
            }));
        }
        let mut answers = vec![None; searches.len()];
        let passes = packed_first_runs(&searches, &mut answers);
        let _ = writeln!(out, "{:<8} {:>9} {:>7}", units, searches.len(), passes);
    }
    let (packed, exact, same) =
        packed_vs_exact(opts.count(1_000_000), t.vgpr_blocks, t.sgpr_blocks);
    let _ = writeln!(
        out,
        "{:<12} {:>12} {:>14}",
        "finder", "ns/call", "same answers"
    );
    for (name, ns) in [("packed", packed), ("exact", exact)] {
        let same = if same { "yes" } else { "NO" };
        let _ = writeln!(out, "{:<12} {:>12.1} {:>14}", name, ns, same);
    }
}
