// SPDX-License-Identifier: GPL-2.0

//! Kept-out work-groups and their claim on a module.
//!
//! Work-group dispatch matches every channel's head at once and places the
//! best one that fits ([`super::dispatch`]), so a big work-group that fits
//! nowhere does not hold back smaller ones. The other side of that rule is
//! that it can keep the big one out for ever: when another channel's small
//! work-groups end one at a time and each freed wave slot is taken at once
//! by the next of them, a work-group that needs several units of a module
//! free together never finds them. Splitting does not help a dependent
//! work-group, and it fires only when no head fits anywhere.
//!
//! So a head kept out for a while claims one module: while the claim
//! stands, no other channel places anything there, unless its context is
//! of a strictly higher priority level (slot selection's strict priority
//! holds over the claim, as it does over everything of lower levels). The
//! claimed module's waves end one after another, each within the job
//! timeout or hanging its job, so the module empties and the claimant fits
//! there (a dependent work-group fits an idle module, `SUBMIT` checked it;
//! a piece of a split one is a single wave). One claim stands at a time,
//! the longest-waiting head's, so the claims cost at most one module's
//! idle slots, and the kept-out heads are served in the order they began
//! to wait.
//!
//! This file only keeps the book: which channels' heads are kept out since
//! when ([`KeptOut::settle`]), which one claims ([`KeptOut::due`]), what a
//! claim allows ([`KeptOut::allows`]); the engine chooses the module and
//! carries it out.

use core::ops::DerefMut;

/// A claim on one module by a kept-out head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The claiming channel's key: its context's, which does not change
    /// while the context lives (positions in the context list do).
    pub channel: u64,
    /// The module claimed.
    pub module: u32,
    /// The claiming context's priority level (0 is the highest).
    pub level: u8,
}

/// One channel whose head is kept out, and since when.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waiting {
    channel: u64,
    since: u64,
}

/// The channels whose heads are kept out, since when, and the claim in
/// force, over storage `S` for as many channels as there are hardware
/// slots (the channels are the residents), allocated by the caller.
/// Channels are named by a key that stays the same while the context
/// lives, so removing other contexts changes nothing here.
///
/// # Invariants
///
/// `len <= waiting.len()`, and `waiting[..len]` holds distinct channels,
/// each with the time its head was first found kept out without a
/// placement of that channel since.
#[derive(Debug)]
pub struct KeptOut<S> {
    waiting: S,
    len: usize,
    claim: Option<Claim>,
}

impl<S: DerefMut<Target = [Waiting]>> KeptOut<S> {
    /// No head kept out, no claim; room for `waiting.len()` channels.
    pub fn new(waiting: S) -> Self {
        // INVARIANT: nothing is waiting.
        Self {
            waiting,
            len: 0,
            claim: None,
        }
    }

    /// The channels waiting.
    fn live(&self) -> &[Waiting] {
        self.waiting.get(..self.len).unwrap_or(&[])
    }

    /// Since when the head of `channel` is kept out, if it is.
    pub fn since(&self, channel: u64) -> Option<u64> {
        self.live()
            .iter()
            .find(|w| w.channel == channel)
            .map(|w| w.since)
    }

    /// The claim in force.
    pub fn claim(&self) -> Option<Claim> {
        self.claim
    }

    /// `channel` placed a head: its wait is over, and its claim, if it
    /// had the one in force.
    pub fn placed(&mut self, channel: u64) {
        self.retain(|w| w.channel != channel);
        if self.claim.is_some_and(|c| c.channel == channel) {
            self.claim = None;
        }
    }

    /// Keeps the waiting channels `keep` says yes to, in their order.
    fn retain(&mut self, mut keep: impl FnMut(&Waiting) -> bool) {
        let len = self.len.min(self.waiting.len());
        let mut kept = 0;
        for i in 0..len {
            let Some(&w) = self.waiting.get(i) else {
                break;
            };
            if keep(&w) {
                if let Some(slot) = self.waiting.get_mut(kept) {
                    *slot = w;
                }
                kept += 1;
            }
        }
        // INVARIANT: `kept <= len <= waiting.len()`, the kept ones distinct.
        self.len = kept;
    }

    /// A dispatch ended at `now` with no head that fits: `heads` are the
    /// channels with a head, every one of them kept out. A channel kept out
    /// before keeps its time, a new one starts at `now`; a channel without
    /// a head now is no longer waiting. Channels past the storage's room
    /// are not kept. `O(heads × room)`, allocation-free.
    pub fn settle(&mut self, heads: impl Iterator<Item = u64> + Clone, now: u64) {
        // Those without a head go first, so a newcomer finds their room.
        self.retain(|w| heads.clone().any(|h| h == w.channel));
        for channel in heads {
            if self.since(channel).is_some() {
                continue;
            }
            if let Some(slot) = self.waiting.get_mut(self.len) {
                *slot = Waiting {
                    channel,
                    since: now,
                };
                // INVARIANT: a new channel, within the storage.
                self.len += 1;
            }
        }
    }

    /// No channel has a head any more: nothing waits and no claim stands.
    pub fn clear(&mut self) {
        // INVARIANT: nothing is waiting.
        self.len = 0;
        self.claim = None;
    }

    /// Drops the claim if its channel has no head among `heads` (its job
    /// ended or failed, its context lost its slot or was destroyed): a
    /// claim stands only for a head that waits.
    pub fn check(&mut self, mut heads: impl Iterator<Item = u64>) {
        if let Some(c) = self.claim {
            if !heads.any(|h| h == c.channel) {
                self.claim = None;
            }
        }
    }

    /// The channel that claims a module at `now`, if no claim stands and
    /// `eligible` says yes to it: of those, the one kept out longest (the
    /// earliest time; of equal ones, the first to be kept out), if it has
    /// been kept out for `delay` at least.
    pub fn due(&self, now: u64, delay: u64, mut eligible: impl FnMut(u64) -> bool) -> Option<u64> {
        if self.claim.is_some() {
            return None;
        }
        let mut best: Option<&Waiting> = None;
        for w in self.live() {
            if best.is_none_or(|b| w.since < b.since) && eligible(w.channel) {
                best = Some(w);
            }
        }
        best.filter(|w| now.saturating_sub(w.since) >= delay)
            .map(|w| w.channel)
    }

    /// Puts `claim` in force.
    pub fn grant(&mut self, claim: Claim) {
        self.claim = Some(claim);
    }

    /// Whether a head of `channel`, of a context at priority `level`, may
    /// be placed on `module`: anywhere without a claim; the claimant and
    /// a strictly higher level anywhere; the others anywhere but the
    /// claimed module.
    pub fn allows(&self, channel: u64, level: u8, module: u32) -> bool {
        match self.claim {
            None => true,
            Some(c) => c.channel == channel || level < c.level || c.module != module,
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::{
        vec,
        vec::Vec, //
    };

    use super::*;

    const ROOM: usize = 8;

    fn book() -> KeptOut<Vec<Waiting>> {
        KeptOut::new(vec![Waiting::default(); ROOM])
    }

    fn any(_: u64) -> bool {
        true
    }

    #[test]
    fn a_head_kept_out_keeps_its_first_time_until_its_channel_places() {
        let mut k = book();
        k.settle([3, 5].into_iter(), 100);
        k.settle([5, 3, 7].into_iter(), 200);
        assert_eq!(k.since(3), Some(100));
        assert_eq!(k.since(5), Some(100));
        assert_eq!(k.since(7), Some(200));
        k.placed(5);
        assert_eq!(k.since(5), None);
        k.settle([5, 3].into_iter(), 300);
        assert_eq!(k.since(5), Some(300));
        assert_eq!(k.since(3), Some(100));
        // Without a head, a channel no longer waits.
        assert_eq!(k.since(7), None);
        k.clear();
        assert_eq!(k.since(3), None);
    }

    #[test]
    fn the_longest_waiting_eligible_claims_once_the_delay_has_passed() {
        let mut k = book();
        k.settle([4].into_iter(), 50);
        k.settle([2, 4, 9].into_iter(), 60);
        assert_eq!(k.due(1049, 1000, any), None);
        assert_eq!(k.due(1050, 1000, any), Some(4));
        // One that could never fit an idle module is passed over.
        assert_eq!(k.due(1060, 1000, |c| c != 4), Some(2));
        k.grant(Claim {
            channel: 4,
            module: 1,
            level: 8,
        });
        // One claim at a time.
        assert_eq!(k.due(5000, 1000, any), None);
        k.placed(4);
        assert_eq!(k.claim(), None);
        // Of equal times, the first kept out.
        assert_eq!(k.due(5000, 1000, any), Some(2));
    }

    #[test]
    fn a_claim_keeps_others_off_its_module_but_a_higher_level() {
        let mut k = book();
        assert!(k.allows(1, 8, 0));
        k.grant(Claim {
            channel: 4,
            module: 2,
            level: 8,
        });
        assert!(k.allows(4, 8, 2), "the claimant");
        assert!(!k.allows(1, 8, 2), "the same level");
        assert!(!k.allows(1, 9, 2), "a lower level");
        assert!(k.allows(1, 7, 2), "a higher level");
        assert!(k.allows(1, 8, 1), "another module");
    }

    #[test]
    fn a_claim_ends_with_its_head() {
        let mut k = book();
        k.grant(Claim {
            channel: 4,
            module: 2,
            level: 8,
        });
        k.check([1, 4].into_iter());
        assert!(k.claim().is_some());
        k.check([1, 3].into_iter());
        assert_eq!(k.claim(), None);
    }

    #[test]
    fn a_newcomer_finds_the_room_of_those_gone_in_a_full_book() {
        let mut k = book();
        k.settle(0..ROOM as u64, 10);
        // One resident left and another came: room for the newcomer.
        k.settle((1..ROOM as u64).chain([100]), 20);
        assert_eq!(k.since(0), None);
        assert_eq!(k.since(100), Some(20));
        assert_eq!(k.since(1), Some(10));
        // More heads than room: the rest are not kept, nothing breaks.
        k.settle(200..200 + 2 * ROOM as u64, 30);
        assert_eq!(k.since(200 + ROOM as u64 - 1), Some(30));
        assert_eq!(k.since(200 + ROOM as u64), None);
        // Dropping some keeps the others' times.
        k.settle((200..200 + ROOM as u64).filter(|c| c % 2 == 0), 40);
        assert_eq!(k.since(202), Some(30));
        assert_eq!(k.since(203), None);
    }
}
