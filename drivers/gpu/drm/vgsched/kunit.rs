// SPDX-License-Identifier: GPL-2.0

//! KUnit suites run when the module loads (with `CONFIG_KUNIT`): the shared
//! core logic checked again inside the kernel, built with the kernel's
//! compiler flags.

#[kernel::macros::kunit_tests(vgsched_core_topology)]
mod topology {
    use crate::vgsched_core::topology::{
        limits,
        Topology, //
    };

    #[test]
    fn default_topology_is_valid() {
        assert_eq!(Topology::DEFAULT.validate(), Ok(()));
        assert_eq!(Topology::DEFAULT.total_units(), 16);
    }

    #[test]
    fn out_of_range_field_is_named() {
        let mut t = Topology::DEFAULT;
        t.units_per_module = limits::UNITS_PER_MODULE.1 + 1;
        let err = t.validate().unwrap_err();
        assert_eq!(err.field, "units_per_module");
        assert_eq!(err.max, u64::from(limits::UNITS_PER_MODULE.1));
    }

    #[test]
    fn zero_modules_is_rejected() {
        let t = Topology {
            modules: 0,
            ..Topology::DEFAULT
        };
        assert_eq!(t.validate().unwrap_err().field, "modules");
    }
}

/// The instruction set is defined twice, as Rust in the core crate and as C
/// in the uAPI header user space assembles with; these tests hold the two
/// together.
#[kernel::macros::kunit_tests(vgsched_isa_uapi)]
mod isa_uapi {
    use crate::uapi;
    use crate::vgsched_core::{
        dispatch,
        isa::{
            self,
            Class,
            Op,
            Special, //
        }, //
    };

    #[test]
    fn limits_match_the_header() {
        assert_eq!(isa::INSTR_BYTES, uapi::DRM_VGSCHED_ISA_INSTR_BYTES as usize);
        assert_eq!(isa::NUM_REGS, uapi::DRM_VGSCHED_ISA_NUM_REGS as usize);
        assert_eq!(isa::MAX_INSTRS, uapi::DRM_VGSCHED_ISA_MAX_INSTRS as usize);
        assert_eq!(
            isa::MAX_BINDINGS,
            uapi::DRM_VGSCHED_ISA_MAX_BINDINGS as usize
        );
        assert_eq!(dispatch::BANDS, uapi::DRM_VGSCHED_GROUP_PRIORITIES as usize);
    }

    #[test]
    fn opcodes_match_the_header() {
        let header = [
            (Op::End, uapi::DRM_VGSCHED_OP_END),
            (Op::Mov, uapi::DRM_VGSCHED_OP_MOV),
            (Op::Movi, uapi::DRM_VGSCHED_OP_MOVI),
            (Op::Sreg, uapi::DRM_VGSCHED_OP_SREG),
            (Op::Ld, uapi::DRM_VGSCHED_OP_LD),
            (Op::St, uapi::DRM_VGSCHED_OP_ST),
            (Op::Add, uapi::DRM_VGSCHED_OP_ADD),
            (Op::Sub, uapi::DRM_VGSCHED_OP_SUB),
            (Op::Mul, uapi::DRM_VGSCHED_OP_MUL),
            (Op::And, uapi::DRM_VGSCHED_OP_AND),
            (Op::Or, uapi::DRM_VGSCHED_OP_OR),
            (Op::Xor, uapi::DRM_VGSCHED_OP_XOR),
            (Op::Shl, uapi::DRM_VGSCHED_OP_SHL),
            (Op::Shr, uapi::DRM_VGSCHED_OP_SHR),
            (Op::Addi, uapi::DRM_VGSCHED_OP_ADDI),
            (Op::Fadd, uapi::DRM_VGSCHED_OP_FADD),
            (Op::Fsub, uapi::DRM_VGSCHED_OP_FSUB),
            (Op::Fmul, uapi::DRM_VGSCHED_OP_FMUL),
            (Op::Itof, uapi::DRM_VGSCHED_OP_ITOF),
            (Op::Ftoi, uapi::DRM_VGSCHED_OP_FTOI),
            (Op::Mad, uapi::DRM_VGSCHED_OP_MAD),
            (Op::Fma, uapi::DRM_VGSCHED_OP_FMA),
            (Op::Slt, uapi::DRM_VGSCHED_OP_SLT),
            (Op::Sltu, uapi::DRM_VGSCHED_OP_SLTU),
            (Op::Seq, uapi::DRM_VGSCHED_OP_SEQ),
            (Op::Flt, uapi::DRM_VGSCHED_OP_FLT),
            (Op::Br, uapi::DRM_VGSCHED_OP_BR),
            (Op::Brz, uapi::DRM_VGSCHED_OP_BRZ),
            (Op::Brnz, uapi::DRM_VGSCHED_OP_BRNZ),
        ];
        // Every opcode of the core crate appears exactly once above.
        assert_eq!(header.len(), Op::ALL.len());
        for (op, code) in header {
            assert_eq!(op as u32, code);
            assert_eq!(Op::from_code(code as u8), Some(op));
        }
    }

    #[test]
    fn special_registers_match_the_header() {
        let header = [
            (Special::GlobalId, uapi::DRM_VGSCHED_SREG_GLOBAL_ID),
            (Special::LocalId, uapi::DRM_VGSCHED_SREG_LOCAL_ID),
            (Special::GroupId, uapi::DRM_VGSCHED_SREG_GROUP_ID),
            (Special::GroupThreads, uapi::DRM_VGSCHED_SREG_GROUP_THREADS),
            (Special::NumGroups, uapi::DRM_VGSCHED_SREG_NUM_GROUPS),
            (Special::WaveId, uapi::DRM_VGSCHED_SREG_WAVE_ID),
            (Special::Lane, uapi::DRM_VGSCHED_SREG_LANE),
        ];
        assert_eq!(header.len() as u32, isa::NUM_SPECIALS);
        for (special, code) in header {
            assert_eq!(special as u32, code);
        }
    }

    #[test]
    fn instruction_classes_match_the_header() {
        let header = [
            (Class::Move, uapi::DRM_VGSCHED_CLASS_MOVE),
            (Class::Alu, uapi::DRM_VGSCHED_CLASS_ALU),
            (Class::Load, uapi::DRM_VGSCHED_CLASS_LOAD),
            (Class::Store, uapi::DRM_VGSCHED_CLASS_STORE),
            (Class::Matrix, uapi::DRM_VGSCHED_CLASS_MATRIX),
            (Class::Compare, uapi::DRM_VGSCHED_CLASS_COMPARE),
            (Class::Jump, uapi::DRM_VGSCHED_CLASS_JUMP),
        ];
        assert_eq!(header.len(), isa::NUM_CLASSES);
        assert_eq!(isa::NUM_CLASSES as u32, uapi::DRM_VGSCHED_NUM_CLASSES);
        for (class, code) in header {
            assert_eq!(class as u32, code);
        }
        // The uAPI's cycle_costs array has room for every class.
        let info = uapi::drm_vgsched_gpu_info::default();
        assert!(info.cycle_costs.len() >= isa::NUM_CLASSES);
    }
}

/// The soft-float the float instructions use, run again under the kernel's
/// compiler flags (where hardware floats are unavailable).
#[kernel::macros::kunit_tests(vgsched_softfloat)]
mod softfloat {
    use crate::vgsched_core::softfloat::{
        add,
        from_i32,
        lt,
        mul,
        sub,
        to_i32,
        QNAN, //
    };

    // Bit patterns of binary32 values, written out since the kernel has no
    // float literals to compare against.
    const ONE: u32 = 0x3f80_0000;
    const ONE_AND_HALF: u32 = 0x3fc0_0000;
    const TWO_AND_QUARTER: u32 = 0x4010_0000;
    const THREE_AND_THREE_QUARTERS: u32 = 0x4070_0000;
    const MINUS_ONE_AND_HALF: u32 = 0xbfc0_0000;
    const THREE: u32 = 0x4040_0000;
    const MINUS_HALF: u32 = 0xbf00_0000;
    const INF: u32 = 0x7f80_0000;

    #[test]
    fn arithmetic() {
        assert_eq!(add(ONE_AND_HALF, TWO_AND_QUARTER), THREE_AND_THREE_QUARTERS);
        assert_eq!(mul(THREE, MINUS_HALF), MINUS_ONE_AND_HALF);
        assert_eq!(sub(ONE, ONE), 0);
        assert_eq!(add(INF, INF | 0x8000_0000), QNAN);
        // The smallest normal halved is an exact subnormal.
        assert_eq!(mul(0x0080_0000, 0x3f00_0000), 0x0040_0000);
    }

    #[test]
    fn conversions_and_compare() {
        assert_eq!(from_i32(3), THREE);
        // 2^24 + 1 is a tie between 2^24 and 2^24 + 2: even wins.
        assert_eq!(from_i32(16_777_217), 0x4b80_0000);
        assert_eq!(to_i32(MINUS_ONE_AND_HALF), -1);
        assert_eq!(to_i32(INF), i32::MAX);
        assert_eq!(to_i32(QNAN), 0);
        assert!(lt(MINUS_HALF, ONE));
        assert!(!lt(QNAN, ONE));
        assert!(!lt(0x8000_0000, 0));
    }
}

/// The interpreter inside the kernel: a float vector add and a faulting
/// store, over plain kernel arrays standing in for bound buffers.
#[kernel::macros::kunit_tests(vgsched_exec)]
mod exec {
    use crate::vgsched_core::{
        exec::{
            CycleCosts,
            Exit,
            SliceMemory as Arrays, //
        },
        grid::{
            run_wave,
            Grid,
            WaveEnd, //
        },
        isa::{
            encode as word,
            validate,
            Instr,
            Op,
            Special, //
        }, //
    };

    fn float_vector_add() -> [u64; 6] {
        [
            word(Op::Sreg, 0, 0, 0, Special::GlobalId as i32),
            word(Op::Ld, 1, 0, 0, 0),
            word(Op::Ld, 2, 0, 1, 0),
            word(Op::Fadd, 3, 1, 2, 0),
            word(Op::St, 3, 0, 2, 0),
            word(Op::End, 0, 0, 0, 0),
        ]
    }

    #[test]
    fn float_vector_add_wave() {
        let mut prog = [Instr {
            op: Op::End,
            rd: 0,
            ra: 0,
            rb: 0,
            imm: 0,
        }; 6];
        assert_eq!(validate(&float_vector_add(), 3, &mut prog), Ok(6));
        // 1.5 + 0.5, 2.0 + 4.0, -3.0 + 3.0, 0.25 + 1.0 as binary32 bits.
        let mut a = [0x3fc0_0000, 0x4000_0000, 0xc040_0000, 0x3e80_0000];
        let mut b = [0x3f00_0000, 0x4080_0000, 0x4040_0000, 0x3f80_0000];
        let mut c = [0u32; 4];
        let mut bufs: [&mut [u32]; 3] = [&mut a, &mut b, &mut c];
        let grid = Grid {
            groups: 1,
            waves_per_group: 1,
            threads_per_wave: 4,
        };
        let run = run_wave(
            &prog,
            &grid,
            0,
            0,
            &mut Arrays(&mut bufs),
            &CycleCosts::DEFAULT,
            1000,
        );
        assert_eq!(run.end, WaveEnd::Done);
        assert_eq!(c, [0x4000_0000, 0x40c0_0000, 0, 0x3fa0_0000]);
    }

    #[test]
    fn out_of_bounds_store_faults() {
        let mut prog = [Instr {
            op: Op::End,
            rd: 0,
            ra: 0,
            rb: 0,
            imm: 0,
        }; 6];
        assert_eq!(validate(&float_vector_add(), 3, &mut prog), Ok(6));
        let (mut a, mut b, mut c) = ([0u32; 4], [0u32; 4], [0u32; 2]);
        let mut bufs: [&mut [u32]; 3] = [&mut a, &mut b, &mut c];
        let grid = Grid {
            groups: 1,
            waves_per_group: 1,
            threads_per_wave: 4,
        };
        let run = run_wave(
            &prog,
            &grid,
            0,
            0,
            &mut Arrays(&mut bufs),
            &CycleCosts::DEFAULT,
            1000,
        );
        assert_eq!(
            run.end,
            WaveEnd::Fault {
                exit: Exit::OutOfBounds {
                    pc: 4,
                    slot: 2,
                    index: 2
                }
            }
        );
    }
}

/// The bitmask resource finder, checked inside the kernel against
/// a bit-by-bit scan: the same code the host tests check, under the
/// kernel's compiler flags (overflow checks, no 128-bit division helpers).
#[kernel::macros::kunit_tests(vgsched_bitmask)]
mod bitmask {
    use crate::vgsched_core::bitmask::{
        self,
        naive::{
            first_free_run as naive_first,
            largest_free_run as naive_largest, //
        },
        FinderKind,
        PackedFinder, //
    };

    #[test]
    fn exact_finders_on_every_12_bit_map() {
        for bits in 0u64..1 << 12 {
            // Garbage above the map's end must read as in use.
            let map = [bits | !0 << 12];
            assert_eq!(bitmask::largest_free_run(&map, 12), naive_largest(&map, 12));
            for len in 1..=12 {
                assert_eq!(
                    bitmask::first_free_run(&map, 12, len),
                    naive_first(&map, 12, len)
                );
            }
        }
    }

    #[test]
    fn runs_across_words_of_a_4096_bit_map() {
        let mut map = [!0u64; 64];
        // Free runs of 70 bits from bit 100 and of 200 bits from bit 3000.
        bitmask::clear_range(&mut map, 100, 70);
        bitmask::clear_range(&mut map, 3000, 200);
        assert_eq!(bitmask::largest_free_run(&map, 4096), Some((3000, 200)));
        assert_eq!(bitmask::first_free_run(&map, 4096, 70), Some(100));
        assert_eq!(bitmask::first_free_run(&map, 4096, 71), Some(3000));
        assert_eq!(bitmask::first_free_run(&map, 4096, 201), None);
        assert_eq!(bitmask::count_free(&map, 4096), 270);
        bitmask::set_range(&mut map, 3000, 200);
        assert_eq!(bitmask::largest_free_run(&map, 4096), Some((100, 70)));
    }

    #[test]
    fn approximate_finders_never_over_report() {
        for bits in 0u64..1 << 12 {
            let map = [bits | !0 << 12];
            for len in 1..=12 {
                for kind in [FinderKind::Grouped { group: 4 }, FinderKind::Sampled] {
                    if let Some(start) = bitmask::finds(kind, &map, 12, len) {
                        assert!(naive_first(&map[..], 12, len).is_some());
                        for i in start..start + len {
                            assert_eq!(map[0] & (1 << i), 0);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn packed_finder_matches_the_exact_one() {
        let maps: [(u64, usize); 3] = [(0x0f0f_00ff, 40), (0x5555, 16), (0x8000_0001, 64)];
        let mut packed = PackedFinder::new();
        for (map, nbits) in maps {
            assert!(packed.push(&[map], nbits).is_some());
        }
        let mut out = [None; 3];
        packed.largest_free_runs(&mut out);
        for (i, (map, nbits)) in maps.into_iter().enumerate() {
            assert_eq!(out[i], bitmask::largest_free_run(&[map], nbits));
        }
    }

    /// The time-multiplexed finder's periods as the document lays them
    /// out: a 64-block and a 48-block resource share one period, a
    /// 128-block resource takes a whole one; each answer is the exact
    /// finder's.
    #[test]
    fn periods_of_the_documents_layouts() {
        let (a, b, c) = ([0x00ff_0f0f_u64], [0x0000_ff00_u64], [u64::MAX >> 3, 0x0f]);
        let searches = [
            bitmask::Search {
                map: &a,
                nbits: 64,
                len: 5,
            },
            bitmask::Search {
                map: &b,
                nbits: 48,
                len: 9,
            },
            bitmask::Search {
                map: &c,
                nbits: 128,
                len: 60,
            },
        ];
        let mut out = [None; 3];
        assert_eq!(bitmask::packed_first_runs(&searches, &mut out), 2);
        for (s, o) in searches.iter().zip(out) {
            assert_eq!(o, bitmask::first_free_run(s.map, s.nbits, s.len));
        }
    }
}

/// The benchmark's maps and the kernel's finder (`bench.rs`): the guest
/// builds the very maps the host does, and `bitmap_find_next_zero_area()`
/// answers as the core crate's exact finder on them.
#[kernel::macros::kunit_tests(vgsched_finder_bench)]
mod finder_bench {
    use kernel::prelude::*;

    use crate::bench::kernel_first_free_run;
    use crate::vgsched_core::{
        bitmask,
        finder_bench::{
            CASES,
            CASE_FNV1A,
            SCRATCH_WORDS, //
        },
        sample_maps::{
            fnv1a,
            FNV_OFFSET, //
        }, //
    };

    #[test]
    fn maps_match_the_host() -> Result {
        let mut scratch = KVec::from_elem(0u64, SCRATCH_WORDS, GFP_KERNEL)?;
        for (case, &hash) in CASES.iter().zip(&CASE_FNV1A) {
            assert_eq!(fnv1a(case.generate(&mut scratch), FNV_OFFSET), hash);
        }
        Ok(())
    }

    #[test]
    fn kernel_finder_agrees_with_exact() -> Result {
        let mut scratch = KVec::from_elem(0u64, SCRATCH_WORDS, GFP_KERNEL)?;
        for case in &CASES {
            let (nbits, words) = (case.nbits, case.words());
            for map in case.generate(&mut scratch).chunks_exact(words) {
                for len in [1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 32, 33, 64, 65] {
                    let want = bitmask::first_free_run(map, nbits, len);
                    assert_eq!(kernel_first_free_run(map, nbits, len), want);
                }
            }
        }
        // A map too short for nbits is refused rather than read past.
        assert_eq!(kernel_first_free_run(&[0], 128, 1), None);
        Ok(())
    }
}

/// Slot selection in the kernel: its worked examples (priority levels and
/// weights), with the weights' 128-bit products and the slice formulas
/// built by the kernel's compiler (which refuses 128-bit division:
/// `div_sat` must avoid it).
#[kernel::macros::kunit_tests(vgsched_slots)]
mod slots {
    use crate::vgsched_core::{
        pool::{
            Candidate,
            Weight, //
        },
        slice::{
            slice_len,
            SliceFormula,
            SliceParams, //
        },
        slots::{
            reschedule,
            Scratch,
            SlotChange,
            SlotCounters,
            SlotEntry,
            SlotMode,
            SlotPolicy, //
        }, //
    };

    const MIN: u64 = 60_000_000_000;

    /// One decision at `now` over up to 16 entries; the changes it made.
    fn decide(e: &mut [SlotEntry], policy: &SlotPolicy, now: u64) -> ([SlotChange; 40], usize) {
        let blank = Candidate {
            id: 0,
            priority: 0,
            created_ns: 0,
            runtime_ns: 0,
            runnable: false,
            served_pass: 0,
        };
        let mut cands = [blank; 16];
        let mut chosen = [0usize; 16];
        let mut changes = [SlotChange::Round; 40];
        let mut seq = SlotCounters::new();
        let scratch = Scratch {
            cands: &mut cands,
            chosen: &mut chosen,
            changes: &mut changes,
        };
        let n = reschedule(e, now, policy, &mut seq, scratch);
        (changes, n)
    }

    /// Contexts `0..n` at `levels[i]`, created at 0, that ran `ran[i]`.
    fn contexts<const N: usize>(levels: [u8; N], ran: [u64; N]) -> [SlotEntry; N] {
        core::array::from_fn(|i| {
            SlotEntry::new(Candidate {
                id: i as u32,
                priority: levels[i],
                created_ns: 0,
                runtime_ns: ran[i],
                runnable: true,
                served_pass: 0,
            })
        })
    }

    /// The ordered decision gives the weight ranking of slot selection's
    /// worked example (created 9:00, now 10:00) and follows two weights
    /// that cross, as the host tests check on long random traces.
    #[test]
    fn kinetic_tournament_ranks_and_follows_crossing_weights() {
        use crate::vgsched_core::kinetic::{
            Kinetic,
            Node, //
        };
        const MS: u64 = 1_000_000;
        let mut leaves = [None; 8];
        let mut nodes = [Node::EMPTY; 16];
        let (nine, ten) = (9 * 60 * MIN, 10 * 60 * MIN);
        let Some(mut k) = Kinetic::new(&mut leaves, &mut nodes, ten) else {
            panic!("sizes");
        };
        let ran = [3, 10, 2, 6, 1].map(|m| m * MIN);
        for (i, c) in contexts([7; 5], ran).iter().enumerate() {
            let mut c = c.cand;
            c.created_ns = nine;
            k.set(i, Some(c), ten);
        }
        let mut out = [0usize; 8];
        assert_eq!(k.best_k(ten, 8, &mut out), 5);
        assert_eq!(out[..5], [4, 2, 0, 3, 1]);
        // a: 40/10 ms, b: 6/2 ms: equal 2.5 ms later, b ahead after.
        let now = ten + MS;
        let mk = |id: u32, life: u64, run: u64| Candidate {
            id,
            priority: 5,
            created_ns: now - life,
            runtime_ns: run,
            runnable: true,
            served_pass: 0,
        };
        for i in 0..5 {
            k.set(i, None, now);
        }
        k.set(0, Some(mk(0, 40 * MS, 10 * MS)), now);
        k.set(1, Some(mk(1, 6 * MS, 2 * MS)), now);
        assert_eq!(k.best(now + 2_500_000), Some(0));
        assert_eq!(k.best(now + 2_500_001), Some(1));
    }

    /// The ordered decision, taken on events only over the few contexts it
    /// depends on, makes the same changes as the full one over all of them,
    /// in both modes, on a random trace (the host test replays longer
    /// ones).
    #[test]
    fn ordered_decision_makes_the_full_ones_changes() {
        use crate::vgsched_core::{
            kinetic::Node,
            ordered_slots::{
                OrderedSlots,
                Picked,
                Store, //
            },
            rng::Rng,
        };
        const N: usize = 12;
        const MS: u64 = 1_000_000;
        for mode in [SlotMode::SideBySide, SlotMode::InTurn] {
            let policy = SlotPolicy::new(3, SliceFormula::Proportional, 4 * MS).with_mode(mode);
            let mut rng = Rng::new(7);
            let mut now = 10 * MIN;
            let mut e = contexts([5, 5, 6, 5, 6, 5, 5, 6, 5, 5, 5, 6], [0; N]);
            for x in e.iter_mut() {
                x.cand.runnable = false;
                x.cand.created_ns = now - rng.below_u64(MIN);
            }
            let mut full = e;
            let mut leaves = [None; 16];
            let mut nodes = [Node::EMPTY; 32];
            let mut pending = [0u32; N];
            let mut work = [Picked::blank(); N];
            let mut store = Store {
                leaves: &mut leaves,
                nodes: &mut nodes,
                pending: &mut pending,
                work: &mut work,
            };
            let mut ordered = OrderedSlots::new();
            ordered.reset(&mut e, &mut store);
            let mut seq = SlotCounters::new();
            let mut cands = [e[0].cand; N];
            let mut chosen = [0usize; 16];
            let mut changes = [SlotChange::Round; 2 * N + 2];
            let (mut full_cands, mut full_chosen, mut want) = (cands, chosen, changes);
            let mut full_seq = SlotCounters::new();
            let mut full_changes = 0;
            for _ in 0..400 {
                if rng.below(3) == 0 {
                    let i = rng.below(N as u32) as usize;
                    let r = rng.below(3) != 0;
                    e[i].cand.runnable = r;
                    full[i].cand.runnable = r;
                    ordered.touch(&mut e, i, store.pending);
                } else {
                    let dt = 1 + rng.below_u64(3 * MS);
                    for (a, b) in e.iter_mut().zip(full.iter_mut()) {
                        if a.resident && a.turn && a.cand.runnable {
                            a.charge(dt);
                            b.charge(dt);
                        }
                    }
                    now += dt;
                }
                let got = match ordered.due(&e, now) {
                    true => {
                        let scratch = Scratch {
                            cands: &mut cands,
                            chosen: &mut chosen,
                            changes: &mut changes,
                        };
                        ordered.decide(&mut e, now, &policy, &mut seq, &mut store, scratch)
                    }
                    false => 0,
                };
                let scratch = Scratch {
                    cands: &mut full_cands,
                    chosen: &mut full_chosen,
                    changes: &mut want,
                };
                let n = reschedule(&mut full, now, &policy, &mut full_seq, scratch);
                full_changes += n;
                assert_eq!(changes[..got], want[..n]);
                assert!(e
                    .iter()
                    .zip(full.iter())
                    .all(|(a, b)| (a.resident, a.turn, a.cand) == (b.resident, b.turn, b.cand)));
            }
            // The trace made the device change hands.
            assert!(full_changes > 40);
        }
    }

    #[test]
    fn in_turn_runs_the_document_examples() {
        let policy =
            SlotPolicy::new(8, SliceFormula::Proportional, 10_000_000).with_mode(SlotMode::InTurn);
        // 11 contexts, 5 at the third priority (value 2), 6 at the fifth
        // (value 4): those five load, the first runs.
        let mut e = contexts([2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4], [MIN; 11]);
        let (c, n) = decide(&mut e, &policy, 60 * MIN);
        assert_eq!(n, 7);
        assert_eq!(c[0], SlotChange::Round);
        assert!(matches!(c[6], SlotChange::Turn { index: 0, .. }));
        assert!(e.iter().enumerate().all(|(i, x)| x.resident == (i < 5)));
        assert_eq!(e.iter().filter(|x| x.turn).count(), 1);
        // 7 contexts, 2 at value 1, 4 at value 3, 1 at value 9: those two.
        let mut e = contexts([3, 9, 1, 3, 3, 1, 3], [MIN; 7]);
        decide(&mut e, &policy, 60 * MIN);
        assert!(e
            .iter()
            .enumerate()
            .all(|(i, x)| x.resident == (i == 2 || i == 5)));
        assert!(e[2].turn && !e[5].turn);
        // 3 contexts, all at the sixth priority (value 5): all three load.
        let mut e = contexts([5, 5, 5], [MIN; 3]);
        let (c, n) = decide(&mut e, &policy, 60 * MIN);
        assert_eq!(n, 5);
        assert!(e.iter().all(|x| x.resident));
        assert!(matches!(c[4], SlotChange::Turn { index: 0, .. }));
        // Ten loaded, weights 5, 5, 5, 5, 2, 2, 2, 2, 1, 1 (sum 30): the
        // first, of weight 5, runs t0 x 30 / 5 = 6 x t0 under the literal
        // formula.
        let t0 = 30_000_000;
        let policy = SlotPolicy::new(10, SliceFormula::Literal, t0).with_mode(SlotMode::InTurn);
        let ran = [12, 12, 12, 12, 30, 30, 30, 30, 60, 60].map(|m| m * MIN);
        let mut e = contexts([4; 10], ran);
        let (c, n) = decide(&mut e, &policy, 60 * MIN);
        assert_eq!(n, 12);
        assert!(
            matches!(c[11], SlotChange::Turn { index: 0, slice_ns } if slice_ns.abs_diff(6 * t0) <= 1)
        );
    }

    #[test]
    fn only_the_highest_level_is_loaded() {
        // 11 contexts: 5 at value 2, 6 at value 4; 8 slots.
        let mut e: [SlotEntry; 11] = core::array::from_fn(|i| {
            SlotEntry::new(Candidate {
                id: i as u32,
                priority: if i < 5 { 2 } else { 4 },
                created_ns: 0,
                runtime_ns: MIN,
                runnable: true,
                served_pass: 0,
            })
        });
        let mut cands = [Candidate {
            id: 0,
            priority: 0,
            created_ns: 0,
            runtime_ns: 0,
            runnable: false,
            served_pass: 0,
        }; 11];
        let mut chosen = [0usize; 8];
        let mut changes = [SlotChange::Evict {
            index: 0,
            preempted: false,
        }; 22];
        let policy = SlotPolicy::new(8, SliceFormula::Proportional, 10_000_000);
        let mut seq = SlotCounters::new();
        let scratch = Scratch {
            cands: &mut cands,
            chosen: &mut chosen,
            changes: &mut changes,
        };
        assert_eq!(reschedule(&mut e, 60 * MIN, &policy, &mut seq, scratch), 5);
        assert!(e.iter().enumerate().all(|(i, x)| x.resident == (i < 5)));
    }

    #[test]
    fn weights_and_slices_of_the_document() {
        let (nine, ten) = (9 * 60 * MIN, 10 * 60 * MIN);
        assert_eq!(Weight::new(ten, nine, 3 * MIN).milli(), 20_000);
        assert_eq!(Weight::new(ten, nine, 10 * MIN).milli(), 6_000);
        let p = SliceParams {
            t0_ns: 30_000_000,
            min_ns: 1,
            max_ns: u64::MAX,
        };
        assert_eq!(
            slice_len(SliceFormula::Literal, &p, 10, 5_000, 30_000),
            6 * p.t0_ns
        );
        assert_eq!(
            slice_len(SliceFormula::Proportional, &p, 10, 5_000, 30_000),
            p.t0_ns * 50 / 30
        );
    }
}

/// The pipeline's rules and device memory's sizes, the cases the host
/// tests run, in the kernel.
#[kernel::macros::kunit_tests(vgsched_pipeline)]
mod pipeline {
    use crate::vgsched_core::{
        device_memory,
        pipeline::{
            ahead_firsts_cases,
            rule_cases,
            PipelineParams, //
        },
    };

    #[test]
    fn every_rule_case_holds() {
        assert_eq!(rule_cases(), Ok(()));
    }

    #[test]
    fn ahead_firsts_keep_the_first_in_order() {
        assert_eq!(ahead_firsts_cases(), Ok(()));
    }

    #[test]
    fn run_time_parameters_start_from_the_core_defaults() {
        assert_eq!(crate::params::defaults(), Ok(PipelineParams::DEFAULT));
        assert!(crate::params::default_bound_starts_from_the_core());
    }

    #[test]
    fn copies_footprints_and_eviction() {
        assert_eq!(device_memory::cases(), Ok(()));
    }
}

/// Power-aware placement over tiles: the worked example of the standby
/// charge, as the host tests run it.
#[kernel::macros::kunit_tests(vgsched_tiles)]
mod tiles {
    use crate::vgsched_core::tiles::document_cases;

    #[test]
    fn the_documents_example() {
        assert_eq!(document_cases(), Ok(()));
    }
}

/// Projects: the access rules of shared storage and the quota arithmetic,
/// as the host tests run them.
#[kernel::macros::kunit_tests(vgsched_projects)]
mod projects {
    use crate::vgsched_core::projects::cases;

    #[test]
    fn access_rules_and_quotas() {
        assert_eq!(cases(), Ok(()));
    }
}

/// The engine's working set of contexts ([`IndexSet`]): a walk over its
/// members, which lets the settled ones leave, sees what a walk over every
/// context sees, in the same order, through work given and taken and
/// records removed from the list (the host test replays more seeds).
///
/// [`IndexSet`]: crate::vgsched_core::index_set::IndexSet
#[kernel::macros::kunit_tests(vgsched_index_set)]
mod index_set {
    use crate::vgsched_core::index_set::{
        replay_lazy_walks,
        IndexSet, //
    };

    #[test]
    fn set_walks_match_full_walks() {
        const N: usize = 64;
        let (mut work, mut members, mut slots) = ([0u32; N], [0u32; N], [0u32; N]);
        for seed in 1..6 {
            let n = 8 * seed as usize;
            assert_eq!(
                replay_lazy_walks(
                    seed,
                    1_000,
                    &mut work[..n],
                    &mut members[..n],
                    &mut slots[..n]
                ),
                None
            );
        }
    }

    #[test]
    fn removal_of_records_moves_members_down() {
        let (mut members, mut slots) = ([0u32; 16], [0u32; 16]);
        let mut set = IndexSet::new(&mut members[..], &mut slots[..]);
        for i in [9, 0, 3, 12] {
            assert!(set.insert(i));
        }
        assert!(!set.is_sorted());
        set.sort();
        assert_eq!(set.members(), &[0, 3, 9, 12]);
        set.remove_shifted(&[3, 4, 10]);
        assert_eq!(set.members(), &[0, 7, 9]);
        assert!(set.contains(7) && !set.contains(3) && !set.contains(12));
    }
}

/// What the suites of the scheduler over the mock device share: an engine
/// built as the module builds its own, but over the mock
/// ([`crate::gpu::mock`], its jobs end after a given time, nothing is
/// interpreted), its contexts and jobs made through the engine's own entry
/// points (not the ioctls). The cases follow drm_sched's own KUnit suites
/// (`tests_basic.c`, `tests_scheduler.c`) where they apply, and add slots,
/// slices and preemption.
mod rig {
    use kernel::{
        prelude::*,
        sync::Arc,
        time::{
            delay::fsleep,
            Delta, //
        }, //
    };

    use crate::{
        context::{
            monotonic_ns,
            Context,
            PRIORITY_NORMAL_FIRST, //
        },
        engine::Engine,
        fence::Fence,
        job::{
            Bindings,
            JobSpec, //
        },
        vgsched_core::{
            context_switch::{
                SchedParamValues,
                SchedParams, //
            },
            dispatch::DispatchParams,
            grid::Grid,
            isa::{
                Instr,
                Op, //
            },
            occupancy::{
                GroupNeeds,
                WaveNeeds, //
            },
            pipeline::PhaseOneParams,
            tiles::{
                PowerModel,
                TileAccount,
                TileTopology,
                DEFAULT_IDLE_DELAY_US,
                DEFAULT_IDLE_MW,
                DEFAULT_SLEEP_MW,
                DEFAULT_WAKE_US, //
            },
            topology::Topology, //
        },
        vram::DeviceMemory,
    };

    /// A millisecond, in nanoseconds.
    pub(super) const MS: u64 = 1_000_000;
    /// The two priorities the cases use (0 is the highest).
    pub(super) const HIGH: u32 = PRIORITY_NORMAL_FIRST;
    pub(super) const LOW: u32 = PRIORITY_NORMAL_FIRST + 4;
    /// The longest a case waits for a fence.
    const PATIENCE_NS: u64 = 10_000 * MS;

    /// An engine over the mock, shut down when dropped.
    pub(super) struct Rig {
        pub(super) engine: Arc<Engine>,
        contexts: u32,
        down: bool,
    }

    impl Rig {
        /// An engine of `hw_slots` slots, base slice `time_slice_us` and
        /// job timeout `job_timeout_ms`, on a 1 MHz clock (a cycle a
        /// microsecond), over the mock.
        pub(super) fn new(hw_slots: u32, time_slice_us: u32, job_timeout_ms: u32) -> Result<Self> {
            let topology = Topology {
                hw_slots,
                time_slice_us,
                job_timeout_ms,
                clock_khz: 1000,
                ..Topology::DEFAULT
            };
            topology.validate().map_err(|_| EINVAL)?;
            let tile_topology = TileTopology::from_values(topology.modules, 1, 1, &[], &[], &[])
                .map_err(|_| EINVAL)?;
            let model = PowerModel::from_values(
                &tile_topology,
                DEFAULT_IDLE_MW.into(),
                DEFAULT_SLEEP_MW.into(),
                DEFAULT_IDLE_DELAY_US.into(),
                DEFAULT_WAKE_US.into(),
            )
            .map_err(|_| EINVAL)?;
            let tiles = KBox::new(
                TileAccount::new(tile_topology, model, monotonic_ns()),
                GFP_KERNEL,
            )?;
            let sched = SchedParams::from_params(&topology, &SchedParamValues::DEFAULT)
                .map_err(|_| EINVAL)?;
            let memory = DeviceMemory::new(4 << 20, 12_000)?;
            let phase_one = PhaseOneParams::from_values(4, 10).map_err(|_| EINVAL)?;
            let engine = Engine::new_on(
                topology,
                DispatchParams::DEFAULT,
                sched,
                memory,
                phase_one,
                tiles,
                true,
            )?;
            Ok(Self {
                engine,
                contexts: 0,
                down: false,
            })
        }

        /// A new context of `priority`, known to the engine.
        pub(super) fn context(&mut self, priority: u32) -> Result<Arc<Context>> {
            self.contexts += 1;
            let ctx = Context::new(priority, 0, self.contexts, None)?;
            self.engine.register_context(&ctx)?;
            Ok(ctx)
        }

        /// Queues on `ctx` a job of one wave that runs `ms` milliseconds
        /// once it has begun, after `in_fence` if given; its fence.
        pub(super) fn submit(
            &self,
            ctx: &Arc<Context>,
            ms: u64,
            in_fence: Option<&Fence>,
        ) -> Result<Fence> {
            self.submit_with_scratch(ctx, ms, in_fence, 0)
        }

        /// As [`Rig::submit`], with a scratch area of `scratch` bytes of
        /// device memory, placed in its phase 2 and released when the step
        /// collects the finished job.
        pub(super) fn submit_with_scratch(
            &self,
            ctx: &Arc<Context>,
            ms: u64,
            in_fence: Option<&Fence>,
            scratch: u64,
        ) -> Result<Fence> {
            let mut spec = job(ms * 1000, in_fence.cloned())?;
            spec.scratch = scratch;
            let (_, fence, _, make_room) = Engine::submit(self.engine.as_arc_borrow(), ctx, spec)?;
            if make_room {
                Engine::make_room(self.engine.as_arc_borrow(), ctx);
            }
            Ok(fence)
        }

        /// Leases the mock has out.
        pub(super) fn leases_out(&self) -> usize {
            self.engine.gpu().mock().map_or(0, |m| m.leases_out())
        }

        /// Shuts the engine down (once).
        pub(super) fn shut_down(&mut self) {
            if !self.down {
                self.down = true;
                self.engine.shut_down();
            }
        }
    }

    impl Drop for Rig {
        fn drop(&mut self) {
            self.shut_down();
        }
    }

    /// A job of one wave, one thread, that ends at once when interpreted
    /// and runs `cycles` on the mock.
    fn job(cycles: u64, in_fence: Option<Fence>) -> Result<JobSpec> {
        let mut program = KVec::with_capacity(1, GFP_KERNEL)?;
        program.push(
            Instr {
                op: Op::End,
                rd: 0,
                ra: 0,
                rb: 0,
                imm: 0,
            },
            GFP_KERNEL,
        )?;
        Ok(JobSpec {
            program: Arc::new(program, GFP_KERNEL)?,
            bindings: Bindings::default(),
            grid: Grid {
                groups: 1,
                waves_per_group: 1,
                threads_per_wave: 1,
            },
            needs: GroupNeeds {
                waves: 1,
                wave: WaveNeeds { vgpr: 1, sgpr: 1 },
                shared: 0,
            },
            independent: false,
            band: 0,
            in_fence,
            deps: None,
            want_out_fence: false,
            scratch: 0,
            tiles: 1,
            allowed_tiles: 1,
            reserved: Default::default(),
            charge: None,
            mock_cycles: cycles,
        })
    }

    /// Waits (at most [`PATIENCE_NS`]) for `fence`; its status then (0:
    /// it never signalled).
    pub(super) fn wait(fence: &Fence) -> i32 {
        let _ = fence.wait(PATIENCE_NS);
        fence.status()
    }

    /// When `fence` signalled (`u64::MAX`: it did not).
    pub(super) fn at(fence: &Fence) -> u64 {
        fence.signalled_at_ns().unwrap_or(u64::MAX)
    }

    /// Sleeps `ms` milliseconds.
    pub(super) fn sleep_ms(ms: u64) {
        fsleep(Delta::from_millis(ms as i64));
    }

    /// Waits (at most [`PATIENCE_NS`], a millisecond at a time) until
    /// `done`; whether it came.
    pub(super) fn until(mut done: impl FnMut() -> bool) -> bool {
        let deadline = monotonic_ns() + PATIENCE_NS;
        while !done() {
            if monotonic_ns() > deadline {
                return false;
            }
            sleep_ms(1);
        }
        true
    }
}

/// The scheduler over the mock: ordering, priorities, dependencies,
/// timeouts, cancellation and teardown with jobs in flight.
#[kernel::macros::kunit_tests(vgsched_sched_mock)]
mod sched_mock {
    use super::rig::{
        at,
        sleep_ms,
        until,
        wait,
        Rig,
        HIGH,
        LOW,
        MS, //
    };
    use crate::{
        context::monotonic_ns,
        engine::Engine,
        fence::{
            new_timeline,
            Fence, //
        },
    };
    use kernel::prelude::*;

    #[test]
    fn jobs_of_a_context_end_in_order() -> Result {
        let mut rig = Rig::new(8, 10_000, 2000)?;
        let ctx = rig.context(LOW)?;
        let start = monotonic_ns();
        let a = rig.submit(&ctx, 20, None)?;
        let b = rig.submit(&ctx, 20, None)?;
        let c = rig.submit(&ctx, 20, None)?;
        assert_eq!(wait(&c), 1);
        assert_eq!(a.status(), 1);
        assert_eq!(b.status(), 1);
        assert!(at(&a) < at(&b));
        assert!(at(&b) < at(&c));
        // One after the other, not side by side (eight slots are free).
        assert!(at(&c) >= start + 60 * MS);
        Ok(())
    }

    #[test]
    fn a_higher_priority_context_runs_first() -> Result {
        let mut rig = Rig::new(1, 10_000, 2000)?;
        // The low one first: it would win a tie.
        let low = rig.context(LOW)?;
        let high = rig.context(HIGH)?;
        let gate = Fence::new(new_timeline(), 1)?;
        let l = rig.submit(&low, 10, Some(&gate))?;
        let h = rig.submit(&high, 10, Some(&gate))?;
        sleep_ms(5);
        gate.signal(0);
        assert_eq!(wait(&l), 1);
        assert_eq!(wait(&h), 1);
        // The low job ran only once the high one had ended.
        assert!(at(&h) + 10 * MS <= at(&l));
        Ok(())
    }

    #[test]
    fn a_job_waits_for_its_in_fence() -> Result {
        let mut rig = Rig::new(8, 10_000, 2000)?;
        let ctx = rig.context(LOW)?;
        let gate = Fence::new(new_timeline(), 1)?;
        let j = rig.submit(&ctx, 2, Some(&gate))?;
        sleep_ms(30);
        assert_eq!(j.status(), 0);
        let opened = monotonic_ns();
        gate.signal(0);
        assert_eq!(wait(&j), 1);
        assert!(at(&j) >= opened + 2 * MS);
        // A failed in-fence cancels the job, which never runs.
        let failed = Fence::new(new_timeline(), 1)?;
        let k = rig.submit(&ctx, 2, Some(&failed))?;
        failed.signal(EIO.to_errno());
        assert_eq!(wait(&k), ECANCELED.to_errno());
        // Across contexts: a job after another context's job.
        let other = rig.context(LOW)?;
        let first = rig.submit(&ctx, 20, None)?;
        let second = rig.submit(&other, 1, Some(&first))?;
        assert_eq!(wait(&second), 1);
        assert_eq!(first.status(), 1);
        assert!(at(&second) >= at(&first) + MS);
        Ok(())
    }

    #[test]
    fn a_wave_computed_late_ends_when_computed() -> Result {
        let mut rig = Rig::new(8, 10_000, 2000)?;
        let ctx = rig.context(HIGH)?;
        // On the model's time, a 2 ms wave ends 2 ms after it began.
        let a = rig.submit(&ctx, 2, None)?;
        assert_eq!(wait(&a), 1);
        let on_time = rig.engine.context_stats(&ctx)?;
        let t = on_time.last_job;
        assert_eq!(t.last_wave - t.first_wave, 2 * MS);
        // A device that computes every wave's end 5 ms after its modeled
        // time, as the virtual GPU's interpreter behind its clock: the end
        // is when it was computed, never before, and the context's device
        // time is the model's, the stall not charged.
        rig.engine.gpu().mock().ok_or(EINVAL)?.set_late(5 * MS);
        let b = rig.submit(&ctx, 2, None)?;
        assert_eq!(wait(&b), 1);
        let late = rig.engine.context_stats(&ctx)?;
        let t = late.last_job;
        assert!(t.first_wave > 0 && t.last_wave >= t.first_wave + 7 * MS);
        assert!(t.last_wave <= at(&b));
        assert_eq!(late.runtime_ns, 2 * on_time.runtime_ns);
        Ok(())
    }

    #[test]
    fn a_job_past_the_timeout_hangs_and_its_queue_is_cancelled() -> Result {
        let mut rig = Rig::new(8, 10_000, 50)?;
        let ctx = rig.context(LOW)?;
        let other = rig.context(LOW)?;
        let start = monotonic_ns();
        let hung = rig.submit(&ctx, 2000, None)?;
        let behind = [rig.submit(&ctx, 1, None)?, rig.submit(&ctx, 1, None)?];
        let fine = rig.submit(&other, 5, None)?;
        assert_eq!(wait(&hung), ETIME.to_errno());
        for f in &behind {
            assert_eq!(wait(f), ECANCELED.to_errno());
        }
        assert_eq!(wait(&fine), 1);
        // Stopped at the timeout, long before its own end.
        assert!(at(&hung) >= start + 50 * MS);
        assert!(at(&hung) < start + 1000 * MS);
        assert!(rig.engine.context_stats(&ctx)?.guilty);
        assert!(!rig.engine.context_stats(&other)?.guilty);
        // A guilty context takes no more work.
        assert_eq!(rig.submit(&ctx, 1, None).err(), Some(ECANCELED));
        Ok(())
    }

    #[test]
    fn destroying_a_context_cancels_its_jobs_in_flight() -> Result {
        let mut rig = Rig::new(8, 10_000, 2000)?;
        let avail = rig.engine.device_memory().avail();
        let ctx = rig.context(LOW)?;
        let running = rig.submit(&ctx, 1000, None)?;
        let queued = [rig.submit(&ctx, 1000, None)?, rig.submit(&ctx, 1000, None)?];
        // Its first job is on the device.
        assert!(until(|| rig.leases_out() > 0));
        Engine::cancel_context(rig.engine.as_arc_borrow(), &ctx);
        assert_eq!(running.status(), ECANCELED.to_errno());
        for f in &queued {
            assert_eq!(f.status(), ECANCELED.to_errno());
        }
        // Nothing of it is left: no lease, no record, no device memory.
        assert_eq!(rig.leases_out(), 0);
        assert_eq!(rig.engine.context_stats(&ctx).err(), Some(ENOENT));
        assert!(until(|| rig.engine.device_memory().avail() == avail));
        // The device goes on.
        let next = rig.context(LOW)?;
        let j = rig.submit(&next, 1, None)?;
        assert_eq!(wait(&j), 1);
        Ok(())
    }

    #[test]
    fn memory_work_under_pressure_is_never_lost() -> Result {
        // Each job's 1 MiB scratch area in 4 MiB of device memory, beside
        // six contexts' state areas and two slots: three areas fit, and the
        // pipeline prepares more jobs ahead than that. The step does the
        // phases 2 that fit in free chunks at once; one that does not is
        // left to the memory work item, and its job waits for memory until
        // the step collects an earlier job and releases its area. The step
        // and the releases skip their survey while that work item is queued
        // or has a task in hand. A task lost between them would leave a
        // fence unsignalled.
        const CTXS: usize = 6;
        const ROUNDS: usize = 8;
        let mut rig = Rig::new(2, 2_000, 2000)?;
        let avail = rig.engine.device_memory().avail();
        let mut ctxs = KVec::with_capacity(CTXS, GFP_KERNEL)?;
        for _ in 0..CTXS {
            ctxs.push(rig.context(LOW)?, GFP_KERNEL)?;
        }
        let mut fences = KVec::with_capacity(CTXS * ROUNDS, GFP_KERNEL)?;
        for _ in 0..ROUNDS {
            for ctx in ctxs.iter() {
                fences.push(rig.submit_with_scratch(ctx, 1, None, 1 << 20)?, GFP_KERNEL)?;
            }
        }
        for f in fences.iter() {
            assert_eq!(wait(f), 1);
        }
        // Each context's jobs ended in the order they were queued.
        for (i, f) in fences.iter().enumerate().skip(CTXS) {
            assert!(at(&fences[i - CTXS]) < at(f));
        }
        // Every area came back: the scratch areas as their jobs were
        // collected, the state areas with their contexts.
        for ctx in ctxs.iter() {
            Engine::cancel_context(rig.engine.as_arc_borrow(), ctx);
        }
        assert!(until(|| rig.engine.device_memory().avail() == avail));
        Ok(())
    }

    #[test]
    fn shutting_down_with_jobs_in_flight_signals_every_fence() -> Result {
        // Two slots, two contexts of one level: both on the device.
        let mut rig = Rig::new(2, 10_000, 2000)?;
        let a = rig.context(LOW)?;
        let b = rig.context(LOW)?;
        let gate = Fence::new(new_timeline(), 1)?;
        let fences = [
            rig.submit(&a, 1000, None)?,
            rig.submit(&a, 1000, None)?,
            rig.submit(&b, 1000, None)?,
            rig.submit(&b, 1, Some(&gate))?,
        ];
        assert!(until(|| rig.leases_out() >= 2));
        rig.shut_down();
        for f in &fences {
            assert_eq!(f.status(), ECANCELED.to_errno());
        }
        assert_eq!(rig.submit(&a, 1, None).err(), Some(ENODEV));
        gate.signal(0);
        Ok(())
    }
}

/// The scheduler over the mock: hardware slots, time slices and
/// preemption.
#[kernel::macros::kunit_tests(vgsched_sched_mock_slots)]
mod sched_mock_slots {
    use super::rig::{
        at,
        sleep_ms,
        until,
        wait,
        Rig,
        HIGH,
        LOW,
        MS, //
    };
    use crate::{
        context::monotonic_ns,
        fence::{
            new_timeline,
            Fence, //
        },
    };
    use kernel::prelude::*;

    #[test]
    fn one_slot_is_shared_by_time_slices() -> Result {
        // A 5 ms base slice.
        let mut rig = Rig::new(1, 5_000, 2000)?;
        let a = rig.context(LOW)?;
        let b = rig.context(LOW)?;
        let gate = Fence::new(new_timeline(), 1)?;
        let fa = rig.submit(&a, 40, Some(&gate))?;
        let fb = rig.submit(&b, 40, Some(&gate))?;
        sleep_ms(5);
        let start = monotonic_ns();
        gate.signal(0);
        assert_eq!(wait(&fa), 1);
        assert_eq!(wait(&fb), 1);
        // One slot: 80 ms of work in all, one at a time.
        assert!(at(&fa).max(at(&fb)) >= start + 80 * MS);
        // In turns: neither ran its 40 ms alone first.
        assert!(at(&fa).min(at(&fb)) >= start + 60 * MS);
        let (sa, sb) = (rig.engine.context_stats(&a)?, rig.engine.context_stats(&b)?);
        assert!(sa.slices >= 2);
        assert!(sb.slices >= 2);
        assert!(sa.preemptions + sb.preemptions >= 2);
        Ok(())
    }

    #[test]
    fn a_higher_priority_context_preempts_a_running_one() -> Result {
        let mut rig = Rig::new(1, 10_000, 2000)?;
        let low = rig.context(LOW)?;
        let high = rig.context(HIGH)?;
        let l = rig.submit(&low, 1000, None)?;
        assert!(until(|| rig.leases_out() > 0));
        let start = monotonic_ns();
        let h = rig.submit(&high, 10, None)?;
        assert_eq!(wait(&h), 1);
        assert_eq!(wait(&l), 1);
        // It did not wait for the low job's end.
        assert!(at(&h) < at(&l));
        assert!(at(&h) < start + 500 * MS);
        assert!(rig.engine.context_stats(&low)?.preemptions >= 1);
        Ok(())
    }
}
