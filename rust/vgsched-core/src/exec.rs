// SPDX-License-Identifier: GPL-2.0

//! Executes validated programs, one thread at a time, and accounts for the
//! modeled cycles they take.
//!
//! A [`Thread`] keeps its program counter and registers between calls, so
//! the driver can run it in bounded steps (an instruction or a cycle
//! budget) and stop it at any instruction boundary. Memory is reached
//! through the [`Memory`] trait; the kernel module implements it over
//! buffer objects, the tests over arrays.

use super::isa::{
    Class,
    Instr,
    Op,
    NUM_CLASSES,
    NUM_REGS, //
};
use super::softfloat;

/// The identity of a thread, read by `SREG`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadIds {
    /// Index in the whole grid.
    pub global: u32,
    /// Index in the work-group.
    pub local: u32,
    /// Work-group index.
    pub group: u32,
    /// Threads per work-group.
    pub group_threads: u32,
    /// Work-groups in the grid.
    pub num_groups: u32,
    /// Wave index in the work-group.
    pub wave: u32,
    /// Index in the wave.
    pub lane: u32,
}

/// Word-addressed access to the buffers a job binds.
pub trait Memory {
    /// Reads word `index` of binding `slot`; `None` if out of bounds.
    fn load(&mut self, slot: u8, index: u64) -> Option<u32>;
    /// Writes word `index` of binding `slot`; `false` if out of bounds.
    fn store(&mut self, slot: u8, index: u64, value: u32) -> bool;
}

/// [`Memory`] over word slices, one per binding slot: what the tests use
/// in place of buffer objects.
pub struct SliceMemory<'a, 'b>(pub &'a mut [&'b mut [u32]]);

impl Memory for SliceMemory<'_, '_> {
    fn load(&mut self, slot: u8, index: u64) -> Option<u32> {
        self.0
            .get(slot as usize)?
            .get(usize::try_from(index).ok()?)
            .copied()
    }

    fn store(&mut self, slot: u8, index: u64, value: u32) -> bool {
        let Ok(index) = usize::try_from(index) else {
            return false;
        };
        match self.0.get_mut(slot as usize).and_then(|b| b.get_mut(index)) {
            Some(word) => {
                *word = value;
                true
            }
            None => false,
        }
    }
}

/// One word a store overwrote: where, and what it held before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Undo {
    /// Binding slot.
    pub slot: u8,
    /// Word index in the binding.
    pub index: u64,
    /// The word's value before the store.
    pub old: u32,
}

/// [`Memory`] that records, before every store, the word it overwrites, so
/// that a stretch of execution can be taken back ([`undo_stores`]). The log
/// is the caller's; once it is full, recording stops and `full` is set
/// (the stretch can no longer be taken back). Stores go through either
/// way.
pub struct Recording<'a, M: Memory> {
    /// The memory written.
    pub inner: M,
    /// Room for the log.
    pub log: &'a mut [Undo],
    /// Entries of `log` in use.
    pub len: &'a mut usize,
    /// A store was not recorded for lack of room.
    pub full: &'a mut bool,
}

impl<M: Memory> Memory for Recording<'_, M> {
    fn load(&mut self, slot: u8, index: u64) -> Option<u32> {
        self.inner.load(slot, index)
    }

    fn store(&mut self, slot: u8, index: u64, value: u32) -> bool {
        if !*self.full {
            // An out-of-bounds store changes nothing: nothing to record.
            if let Some(old) = self.inner.load(slot, index) {
                match self.log.get_mut(*self.len) {
                    Some(e) => {
                        *e = Undo { slot, index, old };
                        *self.len += 1;
                    }
                    None => *self.full = true,
                }
            }
        }
        self.inner.store(slot, index, value)
    }
}

/// Takes back the stores recorded in `log`, latest first, so `mem` holds
/// what it held when recording began (for the words this stretch wrote).
pub fn undo_stores<M: Memory>(mem: &mut M, log: &[Undo]) {
    for e in log.iter().rev() {
        mem.store(e.slot, e.index, e.old);
    }
}

/// Executed instructions per class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Indexed by `Class as usize`.
    pub per_class: [u64; NUM_CLASSES],
}

impl Counters {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Counters) {
        for (a, b) in self.per_class.iter_mut().zip(other.per_class.iter()) {
            *a += b;
        }
    }

    /// Takes `other` (counted into `self` before) back out of `self`.
    pub fn sub(&mut self, other: &Counters) {
        for (a, b) in self.per_class.iter_mut().zip(other.per_class.iter()) {
            *a = a.saturating_sub(*b);
        }
    }

    /// Total instructions.
    pub fn total(&self) -> u64 {
        self.per_class.iter().sum()
    }

    /// Modeled cycles for these instructions.
    pub fn cycles(&self, costs: &CycleCosts) -> u64 {
        self.per_class
            .iter()
            .zip(costs.per_class.iter())
            .map(|(n, c)| n * u64::from(*c))
            .sum()
    }
}

/// Cycles per instruction of each class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CycleCosts {
    /// Indexed by `Class as usize`.
    pub per_class: [u32; NUM_CLASSES],
}

impl CycleCosts {
    /// Move 1, ALU 1, load 16, store 16, matrix 4, compare 1, jump 2.
    pub const DEFAULT: Self = Self {
        per_class: [1, 1, 16, 16, 4, 1, 2],
    };

    /// Cost of one instruction of class `class`.
    pub fn of(&self, class: Class) -> u32 {
        self.per_class[class as usize]
    }
}

/// Why a thread stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It executed `END`.
    Ended,
    /// The instruction or cycle budget ran out; it can be resumed.
    Budget,
    /// A load or store fell outside its buffer; the job is faulted.
    OutOfBounds {
        /// Index of the faulting instruction.
        pc: u32,
        /// Binding slot accessed.
        slot: u8,
        /// Word index accessed.
        index: i64,
    },
}

/// The architectural state of one thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Thread {
    /// Index of the next instruction.
    pub pc: u32,
    /// Register file.
    pub regs: [u32; NUM_REGS],
}

/// Register file index of register field `r`. Validation keeps fields below
/// [`NUM_REGS`]; wrapping instead of a bounds check keeps the loop free of
/// panics.
#[inline(always)]
fn reg(r: u8) -> usize {
    r as usize % NUM_REGS
}

const _: () = assert!(NUM_REGS.is_power_of_two());

impl Thread {
    /// Runs at most `budget` instructions of `prog`, a program accepted by
    /// [`super::isa::validate`]. Returns why it stopped and adds what it
    /// executed to `counters`. Validation keeps `pc` inside the program; were
    /// it not, the thread would end there rather than panic.
    pub fn run<M: Memory>(
        &mut self,
        prog: &[Instr],
        ids: &ThreadIds,
        mem: &mut M,
        budget: u64,
        counters: &mut Counters,
    ) -> Exit {
        for _ in 0..budget {
            let Some(ins) = prog.get(self.pc as usize) else {
                return Exit::Ended;
            };
            counters.per_class[ins.op.class() as usize] += 1;
            if let Some(exit) = self.step(ins, ids, mem) {
                return exit;
            }
        }
        Exit::Budget
    }

    /// Runs until `END`, a fault, or until the next instruction's cost would
    /// take the cycles spent in this call above `cycle_budget`; that
    /// instruction is not executed, so the thread resumes with it. Returns
    /// why it stopped and the cycles spent: the [`CycleCosts`] of the
    /// instructions executed (and added to `counters`), `END` and a faulting
    /// access included, as [`Counters::cycles`] counts them.
    ///
    /// An instruction of a class costing zero cycles always fits, so a loop
    /// made only of such instructions never stops here; the wave functions
    /// of [`super::grid`] bound instructions too.
    pub fn run_cycles<M: Memory>(
        &mut self,
        prog: &[Instr],
        ids: &ThreadIds,
        mem: &mut M,
        costs: &CycleCosts,
        cycle_budget: u64,
        counters: &mut Counters,
    ) -> (Exit, u64) {
        let (exit, spent, _) =
            self.run_bounded(prog, ids, mem, costs, cycle_budget, u64::MAX, counters);
        (exit, spent)
    }

    /// [`Thread::run_cycles`] that also stops after `instr_budget`
    /// instructions. Returns why it stopped, the cycles spent and the
    /// instructions executed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_bounded<M: Memory>(
        &mut self,
        prog: &[Instr],
        ids: &ThreadIds,
        mem: &mut M,
        costs: &CycleCosts,
        cycle_budget: u64,
        instr_budget: u64,
        counters: &mut Counters,
    ) -> (Exit, u64, u64) {
        let (mut spent, mut done) = (0u64, 0u64);
        while done < instr_budget {
            let Some(ins) = prog.get(self.pc as usize) else {
                return (Exit::Ended, spent, done);
            };
            let class = ins.op.class();
            let cost = u64::from(costs.of(class));
            // spent <= cycle_budget always, so this cannot underflow.
            if cost > cycle_budget - spent {
                break;
            }
            spent += cost;
            done += 1;
            counters.per_class[class as usize] += 1;
            if let Some(exit) = self.step(ins, ids, mem) {
                return (exit, spent, done);
            }
        }
        (Exit::Budget, spent, done)
    }

    /// Executes `ins`, the instruction at `pc`. Returns why the thread
    /// stops, or `None` once it has moved on to the next instruction. A
    /// faulting access changes nothing, so `pc` still names it.
    ///
    /// `ins` is a reference because by value LLVM keeps it packed in one
    /// register and unpacks every field, a fifth more host instructions.
    #[inline(always)]
    fn step<M: Memory>(&mut self, ins: &Instr, ids: &ThreadIds, mem: &mut M) -> Option<Exit> {
        let a = self.regs[reg(ins.ra)];
        // For LD/ST rb is a binding slot, below MAX_BINDINGS <= NUM_REGS.
        let b = self.regs[reg(ins.rb)];
        let d = self.regs[reg(ins.rd)];
        let mut next = self.pc.wrapping_add(1);
        let result: Option<u32> = match ins.op {
            Op::End => return Some(Exit::Ended),
            Op::Mov => Some(a),
            Op::Movi => Some(ins.imm as u32),
            Op::Sreg => Some(match ins.imm {
                0 => ids.global,
                1 => ids.local,
                2 => ids.group,
                3 => ids.group_threads,
                4 => ids.num_groups,
                5 => ids.wave,
                _ => ids.lane,
            }),
            Op::Ld | Op::St => {
                let index = i64::from(a) + i64::from(ins.imm);
                let fault = Exit::OutOfBounds {
                    pc: self.pc,
                    slot: ins.rb,
                    index,
                };
                if index < 0 {
                    return Some(fault);
                }
                if ins.op == Op::Ld {
                    match mem.load(ins.rb, index as u64) {
                        Some(v) => Some(v),
                        None => return Some(fault),
                    }
                } else {
                    if !mem.store(ins.rb, index as u64, d) {
                        return Some(fault);
                    }
                    None
                }
            }
            Op::Add => Some(a.wrapping_add(b)),
            Op::Sub => Some(a.wrapping_sub(b)),
            Op::Mul => Some(a.wrapping_mul(b)),
            Op::And => Some(a & b),
            Op::Or => Some(a | b),
            Op::Xor => Some(a ^ b),
            Op::Shl => Some(a << (b % 32)),
            Op::Shr => Some(a >> (b % 32)),
            Op::Addi => Some(a.wrapping_add(ins.imm as u32)),
            Op::Fadd => Some(softfloat::add(a, b)),
            Op::Fsub => Some(softfloat::sub(a, b)),
            Op::Fmul => Some(softfloat::mul(a, b)),
            Op::Itof => Some(softfloat::from_i32(a as i32)),
            Op::Ftoi => Some(softfloat::to_i32(a) as u32),
            Op::Mad => Some(d.wrapping_add(a.wrapping_mul(b))),
            Op::Fma => Some(softfloat::add(d, softfloat::mul(a, b))),
            Op::Slt => Some(u32::from((a as i32) < (b as i32))),
            Op::Sltu => Some(u32::from(a < b)),
            Op::Seq => Some(u32::from(a == b)),
            Op::Flt => Some(u32::from(softfloat::lt(a, b))),
            Op::Br => {
                next = ins.imm as u32;
                None
            }
            Op::Brz | Op::Brnz => {
                if (a == 0) == (ins.op == Op::Brz) {
                    next = ins.imm as u32;
                }
                None
            }
        };
        if let Some(v) = result {
            self.regs[reg(ins.rd)] = v;
        }
        self.pc = next;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{
        validate,
        Special, //
    };

    use SliceMemory as Arrays;

    use crate::isa::encode as ins;

    fn load(words: &[u64], bindings: usize) -> ([Instr; 64], usize) {
        let mut out = [Instr {
            op: Op::End,
            rd: 0,
            ra: 0,
            rb: 0,
            imm: 0,
        }; 64];
        let n = validate(words, bindings, &mut out).unwrap();
        (out, n)
    }

    #[test]
    fn vector_add_of_floats() {
        let (prog, n) = load(
            &[
                ins(Op::Sreg, 0, 0, 0, Special::GlobalId as i32),
                ins(Op::Ld, 1, 0, 0, 0),
                ins(Op::Ld, 2, 0, 1, 0),
                ins(Op::Fadd, 3, 1, 2, 0),
                ins(Op::St, 3, 0, 2, 0),
                ins(Op::End, 0, 0, 0, 0),
            ],
            3,
        );
        let mut a: [u32; 4] = [1.5f32, 2.0, -3.0, 0.25].map(f32::to_bits);
        let mut b: [u32; 4] = [0.5f32, 4.0, 3.0, 1.0].map(f32::to_bits);
        let mut c = [0u32; 4];
        let mut bufs: [&mut [u32]; 3] = [&mut a, &mut b, &mut c];
        let mut mem = Arrays(&mut bufs);
        let mut counters = Counters::default();
        for t in 0..4 {
            let ids = ThreadIds {
                global: t,
                ..Default::default()
            };
            let mut th = Thread::default();
            assert_eq!(
                th.run(&prog[..n], &ids, &mut mem, 100, &mut counters),
                Exit::Ended
            );
        }
        assert_eq!(c.map(f32::from_bits), [2.0, 6.0, 0.0, 1.25]);
        assert_eq!(counters.per_class[Class::Load as usize], 8);
        assert_eq!(counters.per_class[Class::Store as usize], 4);
        assert_eq!(counters.total(), 24);
        assert_eq!(
            counters.cycles(&CycleCosts::DEFAULT),
            4 * (1 + 16 + 16 + 1 + 16 + 2)
        );
    }

    /// dot = sum(a[i] * b[i]) with an integer loop and MAD.
    #[test]
    fn integer_dot_product_loop() {
        let (prog, n) = load(
            &[
                ins(Op::Movi, 0, 0, 0, 0), // i = 0
                ins(Op::Movi, 1, 0, 0, 5), // n = 5
                ins(Op::Movi, 2, 0, 0, 0), // acc = 0
                ins(Op::Ld, 3, 0, 0, 0),   // loop: x = a[i]
                ins(Op::Ld, 4, 0, 1, 0),   // y = b[i]
                ins(Op::Mad, 2, 3, 4, 0),  // acc += x * y
                ins(Op::Addi, 0, 0, 0, 1), // i++
                ins(Op::Slt, 5, 0, 1, 0),  // i < n
                ins(Op::Brnz, 0, 5, 0, 3), // loop
                ins(Op::Movi, 6, 0, 0, 0),
                ins(Op::St, 2, 6, 2, 0), // out[0] = acc
                ins(Op::End, 0, 0, 0, 0),
            ],
            3,
        );
        let mut a = [1u32, 2, 3, 4, 5];
        let mut b = [10u32, 20, 30, 40, 50];
        let mut out = [0u32; 1];
        let mut bufs: [&mut [u32]; 3] = [&mut a, &mut b, &mut out];
        let mut th = Thread::default();
        let mut counters = Counters::default();
        let exit = th.run(
            &prog[..n],
            &ThreadIds::default(),
            &mut Arrays(&mut bufs),
            1000,
            &mut counters,
        );
        assert_eq!(exit, Exit::Ended);
        assert_eq!(out[0], 550);
        assert_eq!(counters.per_class[Class::Matrix as usize], 5);
    }

    #[test]
    fn budget_stops_and_resumes_at_an_instruction_boundary() {
        let (prog, n) = load(
            &[
                ins(Op::Movi, 0, 0, 0, 0),
                ins(Op::Addi, 0, 0, 0, 1),
                ins(Op::Slt, 1, 0, 2, 0),
                ins(Op::Brnz, 0, 1, 0, 1),
                ins(Op::End, 0, 0, 0, 0),
            ],
            0,
        );
        let mut full = Thread::default();
        full.regs[2] = 1000;
        let mut stepped = full;
        let mut bufs: [&mut [u32]; 0] = [];
        let mut c = Counters::default();
        assert_eq!(
            full.run(
                &prog[..n],
                &ThreadIds::default(),
                &mut Arrays(&mut bufs),
                u64::MAX,
                &mut c
            ),
            Exit::Ended
        );
        let mut c2 = Counters::default();
        let mut slices = 0;
        while stepped.run(
            &prog[..n],
            &ThreadIds::default(),
            &mut Arrays(&mut bufs),
            7,
            &mut c2,
        ) == Exit::Budget
        {
            slices += 1;
        }
        assert!(slices > 100);
        assert_eq!(stepped, full);
        assert_eq!(c2, c);
    }

    #[test]
    fn out_of_bounds_access_faults_without_writing() {
        let (prog, n) = load(
            &[
                ins(Op::Movi, 0, 0, 0, 4),
                ins(Op::St, 0, 0, 0, 0),
                ins(Op::End, 0, 0, 0, 0),
            ],
            1,
        );
        let mut a = [0u32; 4];
        let mut bufs: [&mut [u32]; 1] = [&mut a];
        let mut th = Thread::default();
        let exit = th.run(
            &prog[..n],
            &ThreadIds::default(),
            &mut Arrays(&mut bufs),
            10,
            &mut Counters::default(),
        );
        assert_eq!(
            exit,
            Exit::OutOfBounds {
                pc: 1,
                slot: 0,
                index: 4
            }
        );
        assert!(bufs[0].iter().all(|&w| w == 0));
        let (prog, n) = load(&[ins(Op::Ld, 0, 0, 0, -1), ins(Op::End, 0, 0, 0, 0)], 1);
        let exit = Thread::default().run(
            &prog[..n],
            &ThreadIds::default(),
            &mut Arrays(&mut bufs),
            10,
            &mut Counters::default(),
        );
        assert_eq!(
            exit,
            Exit::OutOfBounds {
                pc: 0,
                slot: 0,
                index: -1
            }
        );
    }

    /// MOVI (1 cycle), LD (16), END (2): 19 cycles by default.
    fn movi_ld_end() -> ([Instr; 64], usize) {
        load(
            &[
                ins(Op::Movi, 0, 0, 0, 3),
                ins(Op::Ld, 1, 0, 0, 0),
                ins(Op::End, 0, 0, 0, 0),
            ],
            1,
        )
    }

    #[test]
    fn run_cycles_budget_edges() {
        let (prog, n) = movi_ld_end();
        let costs = CycleCosts::DEFAULT;
        let mut a = [0u32, 0, 0, 42];
        let mut bufs: [&mut [u32]; 1] = [&mut a];
        let ids = ThreadIds::default();
        let mut run = |th: &mut Thread, budget: u64, c: &mut Counters| {
            th.run_cycles(&prog[..n], &ids, &mut Arrays(&mut bufs), &costs, budget, c)
        };
        let mut c = Counters::default();

        // Nothing fits in zero cycles.
        let mut th = Thread::default();
        assert_eq!(run(&mut th, 0, &mut c), (Exit::Budget, 0));
        assert_eq!((th, c), (Thread::default(), Counters::default()));

        // MOVI fits; LD, 16 cycles, does not fit the 9 left and is not run.
        assert_eq!(run(&mut th, 10, &mut c), (Exit::Budget, 1));
        assert_eq!((th.pc, th.regs[1], c.total()), (1, 0, 1));
        // LD fits exactly; END (2) does not fit in the 0 left.
        assert_eq!(run(&mut th, 16, &mut c), (Exit::Budget, 16));
        assert_eq!((th.pc, th.regs[1]), (2, 42));
        // END costs 2: one cycle is not enough, two are.
        assert_eq!(run(&mut th, 1, &mut c), (Exit::Budget, 0));
        assert_eq!(run(&mut th, 2, &mut c), (Exit::Ended, 2));
        assert_eq!((c.total(), c.cycles(&costs)), (3, 19));

        // In one call: exact fit ends, one cycle less stops before END.
        for (budget, want) in [
            (19, (Exit::Ended, 19)),
            (18, (Exit::Budget, 17)),
            (u64::MAX, (Exit::Ended, 19)),
        ] {
            let mut th = Thread::default();
            assert_eq!(
                run(&mut th, budget, &mut Counters::default()),
                want,
                "budget {budget}"
            );
        }
    }

    #[test]
    fn run_cycles_runs_zero_cost_instructions_on_an_empty_budget() {
        let (prog, n) = movi_ld_end();
        let mut costs = CycleCosts::DEFAULT;
        costs.per_class[Class::Move as usize] = 0;
        let mut a = [0u32; 4];
        let mut bufs: [&mut [u32]; 1] = [&mut a];
        let mut th = Thread::default();
        let mut c = Counters::default();
        let got = th.run_cycles(
            &prog[..n],
            &ThreadIds::default(),
            &mut Arrays(&mut bufs),
            &costs,
            0,
            &mut c,
        );
        assert_eq!(got, (Exit::Budget, 0));
        assert_eq!(
            (th.pc, th.regs[0], c.per_class[Class::Move as usize]),
            (1, 3, 1)
        );
    }

    #[test]
    fn run_cycles_counts_the_faulting_access() {
        let (prog, n) = load(
            &[
                ins(Op::Movi, 0, 0, 0, 4),
                ins(Op::St, 0, 0, 0, 0),
                ins(Op::End, 0, 0, 0, 0),
            ],
            1,
        );
        let mut a = [0u32; 4];
        let mut bufs: [&mut [u32]; 1] = [&mut a];
        let (ids, costs) = (ThreadIds::default(), CycleCosts::DEFAULT);
        let mut th = Thread::default();
        let mut c = Counters::default();
        // The store does not fit: no fault yet.
        assert_eq!(
            th.run_cycles(&prog[..n], &ids, &mut Arrays(&mut bufs), &costs, 16, &mut c),
            (Exit::Budget, 1)
        );
        let fault = Exit::OutOfBounds {
            pc: 1,
            slot: 0,
            index: 4,
        };
        assert_eq!(
            th.run_cycles(&prog[..n], &ids, &mut Arrays(&mut bufs), &costs, 16, &mut c),
            (fault, 16)
        );
        assert_eq!((th.pc, c.cycles(&costs)), (1, 17));
        assert!(bufs[0].iter().all(|&w| w == 0));
    }

    /// The dot product loop cut into random cycle slices ends exactly as it
    /// does in one run, and each slice's cycles are what its instructions
    /// cost.
    #[test]
    fn run_cycles_in_random_slices_matches_run() {
        let (prog, n) = load(
            &[
                ins(Op::Movi, 0, 0, 0, 0),
                ins(Op::Movi, 2, 0, 0, 0),
                ins(Op::Ld, 3, 0, 0, 0),
                ins(Op::Itof, 3, 3, 0, 0),
                ins(Op::Fma, 2, 3, 3, 0),
                ins(Op::Addi, 0, 0, 0, 1),
                ins(Op::Slt, 5, 0, 1, 0),
                ins(Op::Brnz, 0, 5, 0, 2),
                ins(Op::St, 2, 6, 1, 0),
                ins(Op::End, 0, 0, 0, 0),
            ],
            2,
        );
        let mut rng = super::super::rng::Rng::new(7);
        let costs = CycleCosts {
            per_class: [0, 3, 16, 16, 5, 1, 2],
        };
        let mut a: [u32; 64] = core::array::from_fn(|i| i as u32 * 3);
        let (mut out1, mut out2) = ([0u32; 1], [0u32; 1]);
        let mut whole = Thread::default();
        whole.regs[1] = 64;
        let mut sliced = whole;
        let ids = ThreadIds::default();

        let mut c1 = Counters::default();
        let mut bufs: [&mut [u32]; 2] = [&mut a, &mut out1];
        assert_eq!(
            whole.run(&prog[..n], &ids, &mut Arrays(&mut bufs), u64::MAX, &mut c1),
            Exit::Ended
        );

        let (mut c2, mut spent, mut slices) = (Counters::default(), 0, 0);
        let mut bufs: [&mut [u32]; 2] = [&mut a, &mut out2];
        loop {
            let budget = rng.below_u64(40);
            let before = c2.cycles(&costs);
            let (exit, cycles) = sliced.run_cycles(
                &prog[..n],
                &ids,
                &mut Arrays(&mut bufs),
                &costs,
                budget,
                &mut c2,
            );
            assert!(cycles <= budget);
            assert_eq!(cycles, c2.cycles(&costs) - before);
            spent += cycles;
            slices += 1;
            if exit != Exit::Budget {
                assert_eq!(exit, Exit::Ended);
                break;
            }
            // A stop is a boundary: the next instruction did not fit.
            assert!(costs.of(prog[sliced.pc as usize].op.class()) as u64 > budget - cycles);
        }
        assert!(slices > 100, "{slices} slices");
        assert_eq!((sliced, c2, out2), (whole, c1, out1));
        assert_eq!(spent, c1.cycles(&costs));
    }
}
