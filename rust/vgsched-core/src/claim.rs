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
    /// The claiming channel.
    pub channel: usize,
    /// The module claimed.
    pub module: u32,
    /// The claiming context's priority level (0 is the highest).
    pub level: u8,
}

/// One channel whose head is kept out, and since when.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waiting {
    channel: usize,
    since: u64,
    /// Seen kept out by the current [`KeptOut::settle`].
    fresh: bool,
}

/// The channels whose heads are kept out, since when, and the claim in
/// force, over storage `S` for as many channels as there are hardware
/// slots (the channels are the residents), allocated by the caller.
///
/// # Invariants
///
/// `waiting[..len]` holds distinct channels, each with the time its head
/// was first found kept out without a placement of that channel since.
#[derive(Debug)]
pub struct KeptOut<S> {
    waiting: S,
    len: usize,
    claim: Option<Claim>,
}

impl<S: DerefMut<Target = [Waiting]>> KeptOut<S> {
    /// No head kept out, no claim; room for `waiting.len()` channels.
    pub fn new(waiting: S) -> Self {
        Self {
            waiting,
            len: 0,
            claim: None,
        }
    }

    /// Since when the head of `channel` is kept out, if it is.
    pub fn since(&self, channel: usize) -> Option<u64> {
        self.waiting[..self.len]
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
    pub fn placed(&mut self, channel: usize) {
        if let Some(i) = self.waiting[..self.len]
            .iter()
            .position(|w| w.channel == channel)
        {
            self.len -= 1;
            self.waiting.swap(i, self.len);
        }
        if self.claim.is_some_and(|c| c.channel == channel) {
            self.claim = None;
        }
    }

    /// A dispatch ended at `now` with no head that fits: `heads` are the
    /// channels with a head, every one of them kept out. A channel kept out
    /// before keeps its time, a new one starts at `now`; a channel without
    /// a head now is no longer waiting. Channels past the storage's room
    /// are not kept. `O(heads × room)`, allocation-free.
    pub fn settle(&mut self, heads: impl Iterator<Item = usize>, now: u64) {
        let room = self.waiting.len();
        for w in &mut self.waiting[..self.len] {
            w.fresh = false;
        }
        for channel in heads {
            if let Some(w) = self.waiting[..self.len]
                .iter_mut()
                .find(|w| w.channel == channel)
            {
                w.fresh = true;
            } else if self.len < room {
                self.waiting[self.len] = Waiting {
                    channel,
                    since: now,
                    fresh: true,
                };
                self.len += 1;
            }
        }
        let mut kept = 0;
        for i in 0..self.len {
            if self.waiting[i].fresh {
                self.waiting.swap(kept, i);
                kept += 1;
            }
        }
        self.len = kept;
    }

    /// No channel has a head any more: nothing waits and no claim stands.
    pub fn clear(&mut self) {
        self.len = 0;
        self.claim = None;
    }

    /// Drops the claim if its channel has no head among `heads` (its job
    /// ended or failed, or it lost its slot): a claim stands only for a
    /// head that waits.
    pub fn check(&mut self, mut heads: impl Iterator<Item = usize>) {
        if let Some(c) = self.claim {
            if !heads.any(|h| h == c.channel) {
                self.claim = None;
            }
        }
    }

    /// The channel that claims a module at `now`, if no claim stands: the
    /// one kept out longest (the earliest time; the first of equal ones),
    /// if it has been kept out for `delay` at least.
    pub fn due(&self, now: u64, delay: u64) -> Option<usize> {
        if self.claim.is_some() {
            return None;
        }
        let mut best: Option<&Waiting> = None;
        for w in &self.waiting[..self.len] {
            if best.is_none_or(|b| w.since < b.since) {
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
    pub fn allows(&self, channel: usize, level: u8, module: u32) -> bool {
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

    const ROOM: usize = 64;

    fn book() -> KeptOut<Vec<Waiting>> {
        KeptOut::new(vec![Waiting::default(); ROOM])
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
    fn the_longest_waiting_claims_once_the_delay_has_passed() {
        let mut k = book();
        k.settle([4].into_iter(), 50);
        k.settle([2, 4].into_iter(), 60);
        assert_eq!(k.due(1049, 1000), None);
        assert_eq!(k.due(1050, 1000), Some(4));
        k.grant(Claim {
            channel: 4,
            module: 1,
            level: 8,
        });
        // One claim at a time.
        assert_eq!(k.due(5000, 1000), None);
        k.placed(4);
        assert_eq!(k.claim(), None);
        assert_eq!(k.due(5000, 1000), Some(2));
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
    fn settle_keeps_as_many_distinct_channels_as_it_has_room_for() {
        let mut k = book();
        k.settle((0..2 * ROOM).chain(0..4), 7);
        assert_eq!(k.since(ROOM - 1), Some(7));
        assert_eq!(k.since(ROOM), None);
        // Dropping some keeps the others' times.
        k.settle((0..ROOM).filter(|c| c % 2 == 0), 9);
        assert_eq!(k.since(2), Some(7));
        assert_eq!(k.since(3), None);
    }
}
