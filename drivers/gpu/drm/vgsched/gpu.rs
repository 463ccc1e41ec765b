// SPDX-License-Identifier: GPL-2.0

//! The virtual GPU's hardware, beside the scheduler that drives it.
//!
//! A real GPU executes on its own: the driver hands it work and learns of
//! the results from interrupts, and the CPU time of execution is not the
//! driver's. This module is where the modeled device does the same. So far
//! it holds the wave executor ([`exec`]): the engine (the scheduler) hands
//! it a wave's chunk, from one preemption point to the next, as a
//! [`Lease`](exec::Lease); the executor interprets it on its own work
//! queue, under its own lock, never under the engine's, and hands it back
//! as an event with what the chunk did.

pub(crate) mod exec;
