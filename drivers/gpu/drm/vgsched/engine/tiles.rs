// SPDX-License-Identifier: GPL-2.0

//! The engine's tiles: which modules a job's work-groups may use, and what
//! hwmon and debugfs read of the energy account.
//!
//! The placement decision and the power model are the core crate's
//! ([`crate::vgsched_core::tiles`]); the account lives in
//! [`EngineState::tiles`](super::EngineState), under the engine lock. A
//! job takes its tiles ([`take`], from the dispatcher) when its first
//! work-group is about to be placed, and gives them back ([`give_back`])
//! when its work leaves the device, it ends or its context goes: the
//! only two places the account and the count of holders change for a
//! job. Readers bring the account up to now first:
//! tiles fall asleep in modeled time whether or not anything runs.

use kernel::{
    fmt,
    prelude::*,
    warn_on, //
};

use super::{
    job::Job,
    Engine, //
};
use crate::{
    context::monotonic_ns,
    params,
    vgsched_core::tiles::{
        Policy,
        PowerModel,
        TileAccount,
        TilePlacement,
        TileState,
        TileTopology, //
    },
};

/// Takes tiles for `job`, which holds none, from `account` at `now` by
/// `policy`, among those its file may use: `None` while no node has
/// enough idle ones. `holders` counts the jobs that hold tiles (the
/// dispatcher walks every context for tiles to give back only while
/// there are more of them than the residents' head jobs). The one place
/// a job takes tiles; [`give_back`] the one place it returns them.
pub(super) fn take(
    account: &mut TileAccount,
    holders: &mut usize,
    job: &mut Job,
    policy: Policy,
    now: u64,
) -> Option<TilePlacement> {
    let p = account.place_within(policy, job.spec.tiles, job.spec.allowed_tiles, now)?;
    job.tiles = p.mask;
    job.tiles_start_ns = p.start_ns;
    *holders += 1;
    Some(p)
}

/// Gives back the tiles `job` holds, if any (its work left the device,
/// it ended, or its context is cancelled); counted out of `holders`.
pub(super) fn give_back(account: &mut TileAccount, holders: &mut usize, job: &mut Job, now: u64) {
    if job.tiles == 0 {
        return;
    }
    account.release(job.tiles, now);
    // Counted when it took them: a miss here is a bug.
    warn_on!(*holders == 0);
    *holders = holders.saturating_sub(1);
    job.tiles = 0;
    job.tiles_start_ns = 0;
}

/// What a hwmon channel reports.
#[derive(Clone, Copy)]
pub(crate) enum Quantity {
    /// Energy drawn since load, microjoules.
    EnergyUj,
    /// Power drawn now, microwatts.
    PowerUw,
}

impl Engine {
    /// The tiles of the device.
    pub(crate) fn tile_topology(&self) -> &TileTopology {
        &self.tile_topology
    }

    /// Their power model.
    pub(crate) fn power_model(&self) -> &PowerModel {
        &self.power_model
    }

    /// Whether `module` belongs to one of the tiles of `tiles` (one bit
    /// per tile).
    pub(super) fn on_tiles(&self, module: u32, tiles: u32) -> bool {
        let per = self.tile_topology.modules_per_tile.max(1);
        let tile = module / per;
        tile < u32::BITS && tiles >> tile & 1 == 1
    }

    /// A hwmon reading: channel 0 is the device, then each node, then each
    /// tile; `None` past the last.
    pub(crate) fn tile_reading(&self, what: Quantity, channel: u32) -> Option<u64> {
        let mut st = self.lock();
        st.tiles.advance(monotonic_ns());
        let a = &st.tiles;
        let t = a.topology();
        let (energy_nj, power_mw) = match channel {
            0 => (a.energy_nj(), a.power_mw()),
            c if c <= t.nodes => (a.node_energy_nj(c - 1), a.node_power_mw(c - 1)),
            c => {
                let tile = a.tile(c - 1 - t.nodes)?;
                (tile.energy.nj(), tile.power_mw(a.model()))
            }
        };
        Some(match what {
            Quantity::EnergyUj => energy_nj / 1000,
            Quantity::PowerUw => power_mw.saturating_mul(1000),
        })
    }

    /// The account brought up to now, for debugfs `tiles`; allocated
    /// before the engine lock is taken.
    pub(crate) fn tiles_snapshot(&self) -> Result<KBox<TilesSnapshot>> {
        let snap = KBox::<TilesSnapshot>::new_uninit(GFP_KERNEL)?;
        let mut st = self.lock();
        let now_ns = monotonic_ns();
        st.tiles.advance(now_ns);
        Ok(KBox::write(
            snap,
            TilesSnapshot {
                account: *st.tiles,
                now_ns,
            },
        ))
    }
}

/// The tiles' states and energy at one moment.
pub(crate) struct TilesSnapshot {
    account: TileAccount,
    now_ns: u64,
}

impl fmt::Display for TilesSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = &self.account;
        let t = a.topology();
        let m = a.model();
        writeln!(
            f,
            "now {} policy {} idle_mw {} sleep_mw {} idle_delay_us {} wake_us {}",
            self.now_ns,
            params::placement_policy().name(),
            m.idle_mw,
            m.sleep_mw,
            m.idle_delay_ns / 1000,
            m.wake_ns / 1000
        )?;
        writeln!(
            f,
            "device power_mw {} energy_uj {} busy_energy_uj {}",
            a.power_mw(),
            a.energy_nj() / 1000,
            a.busy_energy_nj() / 1000
        )?;
        for n in 0..t.nodes {
            let (standby_nj, awake_ns) = a.standby(n);
            writeln!(
                f,
                "node {n} {} standby_mw {} power_mw {} energy_uj {} standby_uj {} awake_ns {}",
                if a.node_awake(n) { "awake" } else { "asleep" },
                t.standby_mw.get(n as usize).copied().unwrap_or(0),
                a.node_power_mw(n),
                a.node_energy_nj(n) / 1000,
                standby_nj / 1000,
                awake_ns
            )?;
        }
        for i in 0..t.tiles() {
            let Some(tile) = a.tile(i) else {
                break;
            };
            let state = match tile.state {
                TileState::Busy => "busy",
                TileState::Idle { .. } => "idle",
                TileState::Asleep => "asleep",
            };
            writeln!(
                f,
                "tile {i} node {} type {} {state} busy_mw {} power_mw {} energy_uj {} busy_ns {} idle_ns {} asleep_ns {} wakes {}",
                i / t.tiles_per_node.max(1),
                t.tile_type.get(i as usize).copied().unwrap_or(0),
                tile.busy_mw,
                tile.power_mw(m),
                tile.energy.nj() / 1000,
                tile.busy_ns,
                tile.idle_ns,
                tile.asleep_ns,
                tile.wakes
            )?;
        }
        Ok(())
    }
}
