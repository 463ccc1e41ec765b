// SPDX-License-Identifier: GPL-2.0

//! The virtual GPU's instruction set: encoding and validation.
//!
//! A program is an array of 64-bit little-endian words, one instruction
//! each:
//!
//! ```text
//!  bits  0..8   opcode            (Op)
//!  bits  8..16  rd  destination register, or the stored value for ST
//!  bits 16..24  ra  first source register (index register for LD/ST)
//!  bits 24..32  rb  second source register, or binding slot for LD/ST
//!  bits 32..64  imm signed immediate: constant, word offset, special
//!               register number or branch target
//! ```
//!
//! Every field an opcode does not use must be zero, register numbers are
//! below [`NUM_REGS`], binding slots below the number the job binds, branch
//! targets inside the program, and the last instruction is `END` or an
//! unconditional `BR`, so a valid program can never run off its end. The
//! driver validates every program at submission and refuses it otherwise;
//! the numbers here are mirrored in `include/uapi/drm/vgsched_drm.h` and
//! checked against it by a KUnit test.

/// Registers per thread; each holds 32 bits (an integer or a binary32).
pub const NUM_REGS: usize = 16;
/// Most instructions in one program.
pub const MAX_INSTRS: usize = 4096;
/// Most buffer objects one job may bind.
pub const MAX_BINDINGS: usize = 8;
/// Bytes per encoded instruction.
pub const INSTR_BYTES: usize = 8;

// The interpreter reads `rb` as a register even when it is a binding slot.
const _: () = assert!(MAX_BINDINGS <= NUM_REGS);

/// Instruction classes, as module choice counts them for power estimates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Class {
    /// Register moves and special-register reads.
    Move = 0,
    /// Integer and float arithmetic and logic.
    Alu = 1,
    /// Loads from bound buffers.
    Load = 2,
    /// Stores to bound buffers.
    Store = 3,
    /// Multiply-accumulate ("matrix") operations.
    Matrix = 4,
    /// Comparisons.
    Compare = 5,
    /// Branches and `END`.
    Jump = 6,
}

/// Number of [`Class`] values.
pub const NUM_CLASSES: usize = 7;

/// Special registers `SREG` can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Special {
    /// Index of the thread in the whole grid.
    GlobalId = 0,
    /// Index of the thread in its work-group.
    LocalId = 1,
    /// Index of the work-group in the grid.
    GroupId = 2,
    /// Threads per work-group.
    GroupThreads = 3,
    /// Work-groups in the grid.
    NumGroups = 4,
    /// Index of the thread's wave in its work-group.
    WaveId = 5,
    /// Index of the thread in its wave.
    Lane = 6,
}

/// Number of [`Special`] values.
pub const NUM_SPECIALS: u32 = 7;

/// Which fields an opcode reads; all others must be zero.
#[derive(Clone, Copy)]
struct Uses {
    rd: bool,
    ra: bool,
    rb: Operand,
    imm: Imm,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Operand {
    Unused,
    Register,
    Binding,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Imm {
    Unused,
    Value,
    Special,
    Target,
}

macro_rules! ops {
    ($($name:ident = $code:literal, $mnemonic:literal, $class:ident,
       rd: $rd:literal, ra: $ra:literal, rb: $rb:ident, imm: $imm:ident;)*) => {
        /// Opcodes.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Op {
            $(
                #[doc = $mnemonic]
                $name = $code,
            )*
        }

        impl Op {
            /// Every opcode, in encoding order.
            pub const ALL: &'static [Op] = &[$(Op::$name),*];

            /// The opcode with this encoding, if any.
            pub fn from_code(code: u8) -> Option<Op> {
                match code {
                    $($code => Some(Op::$name),)*
                    _ => None,
                }
            }

            /// The instruction class, for cycle costs and power counters.
            pub fn class(self) -> Class {
                match self {
                    $(Op::$name => Class::$class,)*
                }
            }

            /// The assembler mnemonic.
            pub fn mnemonic(self) -> &'static str {
                match self {
                    $(Op::$name => $mnemonic,)*
                }
            }

            fn uses(self) -> Uses {
                match self {
                    $(Op::$name => Uses {
                        rd: $rd, ra: $ra, rb: Operand::$rb, imm: Imm::$imm,
                    },)*
                }
            }
        }
    };
}

ops! {
    End  = 0x00, "END: the thread is done",                  Jump,    rd: false, ra: false, rb: Unused,   imm: Unused;
    Mov  = 0x01, "MOV rd, ra",                               Move,    rd: true,  ra: true,  rb: Unused,   imm: Unused;
    Movi = 0x02, "MOVI rd, imm",                             Move,    rd: true,  ra: false, rb: Unused,   imm: Value;
    Sreg = 0x03, "SREG rd, special",                         Move,    rd: true,  ra: false, rb: Unused,   imm: Special;
    Ld   = 0x10, "LD rd, b[rb][ra + imm] (32-bit words)",    Load,    rd: true,  ra: true,  rb: Binding,  imm: Value;
    St   = 0x11, "ST b[rb][ra + imm], rd (32-bit words)",    Store,   rd: true,  ra: true,  rb: Binding,  imm: Value;
    Add  = 0x20, "ADD rd, ra, rb (wrapping)",                Alu,     rd: true,  ra: true,  rb: Register, imm: Unused;
    Sub  = 0x21, "SUB rd, ra, rb (wrapping)",                Alu,     rd: true,  ra: true,  rb: Register, imm: Unused;
    Mul  = 0x22, "MUL rd, ra, rb (wrapping)",                Alu,     rd: true,  ra: true,  rb: Register, imm: Unused;
    And  = 0x23, "AND rd, ra, rb",                           Alu,     rd: true,  ra: true,  rb: Register, imm: Unused;
    Or   = 0x24, "OR rd, ra, rb",                            Alu,     rd: true,  ra: true,  rb: Register, imm: Unused;
    Xor  = 0x25, "XOR rd, ra, rb",                           Alu,     rd: true,  ra: true,  rb: Register, imm: Unused;
    Shl  = 0x26, "SHL rd, ra, rb (rb mod 32)",               Alu,     rd: true,  ra: true,  rb: Register, imm: Unused;
    Shr  = 0x27, "SHR rd, ra, rb (logical, rb mod 32)",      Alu,     rd: true,  ra: true,  rb: Register, imm: Unused;
    Addi = 0x28, "ADDI rd, ra, imm (wrapping)",              Alu,     rd: true,  ra: true,  rb: Unused,   imm: Value;
    Fadd = 0x30, "FADD rd, ra, rb",                          Alu,     rd: true,  ra: true,  rb: Register, imm: Unused;
    Fsub = 0x31, "FSUB rd, ra, rb",                          Alu,     rd: true,  ra: true,  rb: Register, imm: Unused;
    Fmul = 0x32, "FMUL rd, ra, rb",                          Alu,     rd: true,  ra: true,  rb: Register, imm: Unused;
    Itof = 0x33, "ITOF rd, ra (i32 to f32)",                 Alu,     rd: true,  ra: true,  rb: Unused,   imm: Unused;
    Ftoi = 0x34, "FTOI rd, ra (f32 to i32, toward zero)",    Alu,     rd: true,  ra: true,  rb: Unused,   imm: Unused;
    Mad  = 0x40, "MAD rd, ra, rb: rd += ra * rb (integer)",  Matrix,  rd: true,  ra: true,  rb: Register, imm: Unused;
    Fma  = 0x41, "FMA rd, ra, rb: rd += ra * rb (float)",    Matrix,  rd: true,  ra: true,  rb: Register, imm: Unused;
    Slt  = 0x50, "SLT rd, ra, rb (signed)",                  Compare, rd: true,  ra: true,  rb: Register, imm: Unused;
    Sltu = 0x51, "SLTU rd, ra, rb (unsigned)",               Compare, rd: true,  ra: true,  rb: Register, imm: Unused;
    Seq  = 0x52, "SEQ rd, ra, rb",                           Compare, rd: true,  ra: true,  rb: Register, imm: Unused;
    Flt  = 0x53, "FLT rd, ra, rb (float)",                   Compare, rd: true,  ra: true,  rb: Register, imm: Unused;
    Br   = 0x60, "BR target",                                Jump,    rd: false, ra: false, rb: Unused,   imm: Target;
    Brz  = 0x61, "BRZ ra, target (if ra == 0)",              Jump,    rd: false, ra: true,  rb: Unused,   imm: Target;
    Brnz = 0x62, "BRNZ ra, target (if ra != 0)",             Jump,    rd: false, ra: true,  rb: Unused,   imm: Target;
}

/// One decoded, validated instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instr {
    /// The operation.
    pub op: Op,
    /// Destination register (or stored value for `ST`).
    pub rd: u8,
    /// First source register.
    pub ra: u8,
    /// Second source register or binding slot.
    pub rb: u8,
    /// Immediate.
    pub imm: i32,
}

impl Instr {
    /// Encodes into the 64-bit program word.
    pub fn encode(&self) -> u64 {
        (self.op as u64)
            | u64::from(self.rd) << 8
            | u64::from(self.ra) << 16
            | u64::from(self.rb) << 24
            | u64::from(self.imm as u32) << 32
    }
}

/// Encodes an instruction from its fields (what assemblers and tests use).
pub fn encode(op: Op, rd: u8, ra: u8, rb: u8, imm: i32) -> u64 {
    Instr {
        op,
        rd,
        ra,
        rb,
        imm,
    }
    .encode()
}

/// Why a program was refused; `pc` is the offending instruction's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgramError {
    /// No instructions.
    Empty,
    /// More than [`MAX_INSTRS`] instructions.
    TooLong,
    /// Unknown opcode.
    BadOpcode {
        /// Index of the offending instruction.
        pc: usize,
    },
    /// Register number out of range.
    BadRegister {
        /// Index of the offending instruction.
        pc: usize,
    },
    /// Binding slot not bound by the job.
    BadBinding {
        /// Index of the offending instruction.
        pc: usize,
    },
    /// Unknown special register.
    BadSpecial {
        /// Index of the offending instruction.
        pc: usize,
    },
    /// Branch target outside the program.
    BadTarget {
        /// Index of the offending instruction.
        pc: usize,
    },
    /// A field the opcode does not use is not zero.
    UnusedFieldSet {
        /// Index of the offending instruction.
        pc: usize,
    },
    /// The last instruction is neither `END` nor `BR`.
    FallsOffEnd,
}

/// Decodes and validates instruction `pc` of a program of `len`
/// instructions whose job binds `bindings` buffers.
pub fn decode(word: u64, pc: usize, len: usize, bindings: usize) -> Result<Instr, ProgramError> {
    let op = Op::from_code(word as u8).ok_or(ProgramError::BadOpcode { pc })?;
    let field = |shift: u32| (word >> shift) as u8;
    let instr = Instr {
        op,
        rd: field(8),
        ra: field(16),
        rb: field(24),
        imm: (word >> 32) as i32,
    };
    let uses = op.uses();
    let reg_ok = |used: bool, r: u8| if used { (r as usize) < NUM_REGS } else { true };
    let zero_ok = |used: bool, r: u8| used || r == 0;
    if !zero_ok(uses.rd, instr.rd)
        || !zero_ok(uses.ra, instr.ra)
        || (uses.rb == Operand::Unused && instr.rb != 0)
        || (uses.imm == Imm::Unused && instr.imm != 0)
    {
        return Err(ProgramError::UnusedFieldSet { pc });
    }
    if !reg_ok(uses.rd, instr.rd)
        || !reg_ok(uses.ra, instr.ra)
        || !reg_ok(uses.rb == Operand::Register, instr.rb)
    {
        return Err(ProgramError::BadRegister { pc });
    }
    // Slots are capped at MAX_BINDINGS whatever the caller passes, so an
    // accepted operand always indexes the register file safely too.
    if uses.rb == Operand::Binding && instr.rb as usize >= bindings.min(MAX_BINDINGS) {
        return Err(ProgramError::BadBinding { pc });
    }
    match uses.imm {
        Imm::Special if instr.imm as u32 >= NUM_SPECIALS => Err(ProgramError::BadSpecial { pc }),
        Imm::Target if instr.imm < 0 || instr.imm as usize >= len => {
            Err(ProgramError::BadTarget { pc })
        }
        _ => Ok(instr),
    }
}

/// Validates a whole program, writing the decoded instructions to `out`
/// (which must hold at least `words.len()`); returns how many were written.
pub fn validate(words: &[u64], bindings: usize, out: &mut [Instr]) -> Result<usize, ProgramError> {
    let len = words.len();
    if len == 0 {
        return Err(ProgramError::Empty);
    }
    if len > MAX_INSTRS || len > out.len() {
        return Err(ProgramError::TooLong);
    }
    for (pc, (&word, slot)) in words.iter().zip(out.iter_mut()).enumerate() {
        *slot = decode(word, pc, len, bindings)?;
    }
    match out[len - 1].op {
        Op::End | Op::Br => Ok(len),
        _ => Err(ProgramError::FallsOffEnd),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::encode as i;

    fn check(words: &[u64], bindings: usize) -> Result<usize, ProgramError> {
        let mut out = [Instr {
            op: Op::End,
            rd: 0,
            ra: 0,
            rb: 0,
            imm: 0,
        }; 16];
        validate(words, bindings, &mut out)
    }

    #[test]
    fn encoding_round_trips_for_every_opcode() {
        for &op in Op::ALL {
            assert_eq!(Op::from_code(op as u8), Some(op));
        }
        let ins = Instr {
            op: Op::Ld,
            rd: 3,
            ra: 4,
            rb: 1,
            imm: -7,
        };
        assert_eq!(decode(ins.encode(), 0, 1, 2), Ok(ins));
    }

    #[test]
    fn valid_program_is_accepted() {
        let prog = [
            i(Op::Sreg, 0, 0, 0, Special::GlobalId as i32),
            i(Op::Ld, 1, 0, 0, 0),
            i(Op::Ld, 2, 0, 1, 0),
            i(Op::Fadd, 3, 1, 2, 0),
            i(Op::St, 3, 0, 2, 0),
            i(Op::End, 0, 0, 0, 0),
        ];
        assert_eq!(check(&prog, 3), Ok(6));
    }

    #[test]
    fn each_malformation_is_refused_with_its_reason() {
        let end = i(Op::End, 0, 0, 0, 0);
        assert_eq!(check(&[], 0), Err(ProgramError::Empty));
        assert_eq!(
            check(&[0xff, end], 0),
            Err(ProgramError::BadOpcode { pc: 0 })
        );
        assert_eq!(
            check(&[i(Op::Add, 16, 0, 0, 0), end], 0),
            Err(ProgramError::BadRegister { pc: 0 })
        );
        assert_eq!(
            check(&[i(Op::Add, 0, 0, 16, 0), end], 0),
            Err(ProgramError::BadRegister { pc: 0 })
        );
        assert_eq!(
            check(&[i(Op::Ld, 0, 0, 2, 0), end], 2),
            Err(ProgramError::BadBinding { pc: 0 })
        );
        assert_eq!(
            check(&[i(Op::Ld, 0, 0, 8, 0), end], 99),
            Err(ProgramError::BadBinding { pc: 0 })
        );
        assert_eq!(
            check(&[i(Op::Sreg, 0, 0, 0, 7), end], 0),
            Err(ProgramError::BadSpecial { pc: 0 })
        );
        assert_eq!(
            check(&[i(Op::Br, 0, 0, 0, 2), end], 0),
            Err(ProgramError::BadTarget { pc: 0 })
        );
        assert_eq!(
            check(&[i(Op::Brz, 0, 0, 0, -1), end], 0),
            Err(ProgramError::BadTarget { pc: 0 })
        );
        assert_eq!(
            check(&[i(Op::Mov, 1, 2, 0, 5), end], 0),
            Err(ProgramError::UnusedFieldSet { pc: 0 })
        );
        assert_eq!(
            check(&[end | 1 << 8], 0),
            Err(ProgramError::UnusedFieldSet { pc: 0 })
        );
        assert_eq!(
            check(&[end, i(Op::Movi, 0, 0, 0, 1)], 0),
            Err(ProgramError::FallsOffEnd)
        );
        assert_eq!(check(&[end; 17], 0), Err(ProgramError::TooLong));
    }

    #[test]
    fn endless_loop_is_a_valid_program() {
        assert_eq!(check(&[i(Op::Br, 0, 0, 0, 0)], 0), Ok(1));
    }
}
