// SPDX-License-Identifier: GPL-2.0

//! Power-aware placement over tiles: which node's tiles a job that needs
//! `k` tiles gets, and what the tiles draw in modeled time.
//!
//! The device's tiles are grouped into nodes that share a standby power.
//! Each tile has a type, and each type a *first power value* (what a tile
//! of it draws while it runs a job). For a job needing `k` tiles:
//!
//! 1. *the fit filter*: nodes with fewer than `k` idle tiles are dropped (a
//!    fully busy node has none);
//! 2. *fullest-first grouping*: the others are grouped by their idle-tile
//!    count, groups in ascending order (nearly full nodes fill first);
//! 3. *idle-power order*: inside a group, nodes go by *second power value*,
//!    the sum of the first power values of their idle tiles, ascending;
//! 4. *the standby charge*: a node whose tiles are all idle adds its
//!    standby power to that sum (its *third power value*) and is ordered by
//!    it;
//! 5. *node choice*: the job takes the first node in this order (2 to 4 make up
//!    the *node order*): its `k` idle tiles of the lowest first power (then
//!    the lowest index).
//!
//! `Spread` is the comparison policy: the node with the most idle tiles
//! first, the way a least-loaded balancer spreads work.
//!
//! The low-power state is [`TilePower`]: a tile idle for the idle
//! delay goes to sleep, and waking it costs a latency; the energy account
//! integrates each tile's power over modeled time.

use super::topology::{
    within,
    ParamError, //
};

/// Limits of `nodes`.
pub const NODES: (u32, u32) = (1, 16);
/// Limits of `tiles_per_node`.
pub const TILES_PER_NODE: (u32, u32) = (1, 16);
/// Most tiles a device has (`nodes` × `tiles_per_node`).
pub const MAX_TILES: usize = 32;
/// Most tile types (`type_power_mw` entries).
pub const MAX_TYPES: usize = 8;
/// Most nodes (`node_standby_mw` entries).
pub const MAX_NODES: usize = NODES.1 as usize;
/// The default first power value of a tile (type 0), milliwatts.
pub const DEFAULT_TYPE_POWER_MW: u32 = 150_000;
/// The default standby power of a node, milliwatts.
pub const DEFAULT_STANDBY_MW: u32 = 25_000;

/// The tiles of the device: nodes of tiles, each tile of a type, each type
/// with its first power value, each node with its standby power. Every
/// tile owns an equal share of the execution modules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileTopology {
    /// Nodes.
    pub nodes: u32,
    /// Tiles per node.
    pub tiles_per_node: u32,
    /// Each tile's type, by tile index (node-major).
    pub tile_type: [u8; MAX_TILES],
    /// Types in use (`type_power_mw` entries given).
    pub types: u32,
    /// The first power value of each type, milliwatts.
    pub type_power_mw: [u32; MAX_TYPES],
    /// Each node's standby power, milliwatts.
    pub standby_mw: [u32; MAX_NODES],
    /// Execution modules per tile.
    pub modules_per_tile: u32,
}

/// Why a tile topology is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopologyError {
    /// A count out of its range.
    Param(ParamError),
    /// More tiles than [`MAX_TILES`].
    TooMany {
        /// Tiles asked for.
        tiles: u32,
    },
    /// The tiles do not divide the modules evenly.
    Uneven {
        /// Modules of the device.
        modules: u32,
        /// Tiles of the device.
        tiles: u32,
    },
    /// A list has the wrong number of entries.
    Count {
        /// The parameter.
        field: &'static str,
        /// Entries given.
        given: u32,
        /// Entries wanted (or 0, for the defaults).
        wanted: u32,
    },
    /// A tile of a type the power table does not have.
    UnknownType {
        /// The tile.
        tile: u32,
        /// Its type.
        ty: u32,
    },
    /// A power out of [`POWER_MW`].
    BadPower {
        /// The parameter.
        field: &'static str,
        /// Its entry.
        index: u32,
        /// Its value.
        mw: u32,
    },
}

/// Limits of a type's first power value and of a node's standby power,
/// milliwatts (10 kW at most: the energy account, in nanojoules, then
/// lasts years even with every tile at that power).
pub const POWER_MW: (u32, u32) = (1, 10_000_000);

impl TileTopology {
    /// The topology of the module parameters: `nodes` × `tiles_per_node`
    /// tiles over `modules` modules; `tile_type` (one per tile, or none:
    /// all type 0), `type_power_mw` (one per type, or none: one type of
    /// [`DEFAULT_TYPE_POWER_MW`]), `node_standby_mw` (one per node, or
    /// none: [`DEFAULT_STANDBY_MW`] each).
    pub fn from_values(
        modules: u32,
        nodes: u64,
        tiles_per_node: u64,
        tile_type: &[u32],
        type_power_mw: &[u32],
        node_standby_mw: &[u32],
    ) -> Result<Self, TopologyError> {
        let nodes = within("nodes", nodes, NODES).map_err(TopologyError::Param)?;
        let per = within("tiles_per_node", tiles_per_node, TILES_PER_NODE)
            .map_err(TopologyError::Param)?;
        let tiles = nodes * per;
        if tiles as usize > MAX_TILES {
            return Err(TopologyError::TooMany { tiles });
        }
        if !modules.is_multiple_of(tiles) {
            return Err(TopologyError::Uneven { modules, tiles });
        }
        let count = |field, given: &[u32], wanted: u32, max: usize| {
            let n = given.len() as u32;
            match n == 0 || (n == wanted && given.len() <= max) {
                true => Ok(()),
                false => Err(TopologyError::Count {
                    field,
                    given: n,
                    wanted,
                }),
            }
        };
        count("tile_type", tile_type, tiles, MAX_TILES)?;
        let types = match type_power_mw.len() {
            0 => 1,
            n if n <= MAX_TYPES => n as u32,
            n => {
                return Err(TopologyError::Count {
                    field: "type_power_mw",
                    given: n as u32,
                    wanted: MAX_TYPES as u32,
                })
            }
        };
        count("node_standby_mw", node_standby_mw, nodes, MAX_NODES)?;
        let mut t = Self {
            nodes,
            tiles_per_node: per,
            tile_type: [0; MAX_TILES],
            types,
            type_power_mw: [0; MAX_TYPES],
            standby_mw: [DEFAULT_STANDBY_MW; MAX_NODES],
            modules_per_tile: modules / tiles,
        };
        t.type_power_mw[0] = DEFAULT_TYPE_POWER_MW;
        for (i, (&ty, slot)) in tile_type.iter().zip(t.tile_type.iter_mut()).enumerate() {
            if ty >= types {
                return Err(TopologyError::UnknownType { tile: i as u32, ty });
            }
            *slot = ty as u8;
        }
        for (list, field, out) in [
            (type_power_mw, "type_power_mw", &mut t.type_power_mw[..]),
            (node_standby_mw, "node_standby_mw", &mut t.standby_mw[..]),
        ] {
            for (i, (&mw, slot)) in list.iter().zip(out.iter_mut()).enumerate() {
                if within(field, mw, POWER_MW).is_err() {
                    return Err(TopologyError::BadPower {
                        field,
                        index: i as u32,
                        mw,
                    });
                }
                *slot = mw;
            }
        }
        Ok(t)
    }

    /// Tiles of the device.
    pub fn tiles(&self) -> u32 {
        self.nodes * self.tiles_per_node
    }

    /// Whether a job of `k` tiles can ever be placed: some node has `k`
    /// tiles (a single shared tile takes jobs of one).
    pub fn fits(&self, k: u32) -> bool {
        k >= 1 && k <= self.tiles_per_node
    }

    /// The mask of every tile of the device.
    pub fn all_tiles(&self) -> u32 {
        low_bits(self.tiles())
    }

    /// The mask of node `n`'s tiles (none past the device's nodes).
    pub fn node_mask(&self, n: u32) -> u32 {
        if n >= self.nodes {
            return 0;
        }
        let shift = n.saturating_mul(self.tiles_per_node);
        low_bits(self.tiles_per_node)
            .checked_shl(shift)
            .unwrap_or(0)
    }

    /// The `want` tiles of `available` a started environment reserves, or
    /// `None` if `available` cannot give a usable reservation: fewer than
    /// `want` tiles, or no node with `min(want, tiles_per_node)` of them.
    /// Node by node, the node with the most of them first (ties to the
    /// lower node), its lowest tiles first: the first node holds a whole
    /// job of as many tiles as the reservation may run at once (a job's
    /// tiles are on one node), so the environment's largest job always
    /// fits on what it reserved.
    pub fn reserve(&self, available: u32, want: u32) -> Option<u32> {
        let mut avail = available & self.all_tiles();
        if avail.count_ones() < want {
            return None;
        }
        let (mut mask, mut left) = (0u32, want);
        let mut first = true;
        while left > 0 {
            let (node, count) = (0..self.nodes)
                .map(|n| (n, (self.node_mask(n) & avail).count_ones()))
                .fold(
                    (0, 0),
                    |best, (n, c)| if c > best.1 { (n, c) } else { best },
                );
            if count == 0 || (first && count < want.min(self.tiles_per_node)) {
                return None;
            }
            first = false;
            let mut here = self.node_mask(node) & avail;
            for _ in 0..left.min(count) {
                let lowest = here & here.wrapping_neg();
                mask |= lowest;
                here &= !lowest;
                left -= 1;
            }
            avail &= !self.node_mask(node);
        }
        Some(mask)
    }

    /// The tiles a job of `k` tiles, whose file may use `allowed`, is
    /// placed on beside the started environments' reservations: its own
    /// environment's tiles if it fits there, otherwise those of `allowed`
    /// no other environment reserved; `None` if it fits on `allowed` only
    /// with tiles another environment reserved (it would wait for that
    /// environment's end). `allowed` as it is if the job never fits on it.
    pub fn job_tiles(&self, k: u32, allowed: u32, reserved: Reserved) -> Option<u32> {
        if !self.fits_within(k, allowed) {
            return Some(allowed);
        }
        let own = allowed & reserved.own;
        if self.fits_within(k, own) {
            return Some(own);
        }
        let free = allowed & !reserved.others;
        self.fits_within(k, free).then_some(free)
    }

    /// Whether a job of `k` tiles may ever be placed on the tiles of
    /// `allowed`: some node has `k` of them.
    pub fn fits_within(&self, k: u32, allowed: u32) -> bool {
        self.fits(k) && (0..self.nodes).any(|n| (self.node_mask(n) & allowed).count_ones() >= k)
    }
}

/// The tiles started environments reserved, as a job's submitter sees
/// them (one mask each, tile `t` at bit `t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reserved {
    /// Its own environment's: its jobs run there when they fit.
    pub own: u32,
    /// Other environments': never its jobs'.
    pub others: u32,
}

/// A mask of the `n` lowest bits (all 32 from 32 on): the mask of a
/// device's `n` tiles.
pub fn low_bits(n: u32) -> u32 {
    match n {
        0 => 0,
        n => u32::MAX >> 32u32.saturating_sub(n),
    }
}

/// A node as placement sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeView {
    /// Tiles the node has.
    pub tiles: u32,
    /// Of those, idle (not held by a job).
    pub idle: u32,
    /// Sum of the first power values of its idle tiles (its second power
    /// value), milliwatts.
    pub idle_power_mw: u64,
    /// Its standby power, milliwatts.
    pub standby_mw: u64,
}

impl NodeView {
    /// No node: what a list of views starts as.
    pub const EMPTY: NodeView = NodeView {
        tiles: 0,
        idle: 0,
        idle_power_mw: 0,
        standby_mw: 0,
    };

    /// The power it is ordered by inside its group: the second power value,
    /// plus the standby power when every tile is idle (the third power
    /// value: the standby charge).
    pub fn order_power_mw(&self) -> u64 {
        match self.idle == self.tiles {
            true => self.idle_power_mw.saturating_add(self.standby_mw),
            false => self.idle_power_mw,
        }
    }
}

/// How jobs are placed on nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// The fit filter, node order and node choice: nearly full nodes
    /// first, then the lowest power.
    Power,
    /// The node with the most idle tiles first (least loaded).
    Spread,
}

/// Limits of `placement_policy`: 0 power, 1 spread.
pub const POLICY: (u32, u32) = (0, 1);

impl Policy {
    /// The policy of parameter value `v` (checked against [`POLICY`]).
    pub fn from_param(v: u32) -> Self {
        match v {
            0 => Self::Power,
            _ => Self::Spread,
        }
    }

    /// Its name, as logs show it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Power => "power",
            Self::Spread => "spread",
        }
    }
}

/// The key `policy` orders a node by (smaller first); `None` if the node
/// cannot take a job of `k` tiles (the fit filter).
pub fn key(policy: Policy, node: &NodeView, k: u32) -> Option<(u32, u64)> {
    if k == 0 || node.idle < k {
        return None;
    }
    Some(match policy {
        Policy::Power => (node.idle, node.order_power_mw()),
        Policy::Spread => (u32::MAX - node.idle, 0),
    })
}

/// Fills `out` with the indices of the nodes that can take a job of `k`
/// tiles, in the order `policy` tries them (ties by index); returns how
/// many. `out` needs room for every node.
pub fn order(policy: Policy, nodes: &[NodeView], k: u32, out: &mut [usize]) -> usize {
    let mut n = 0;
    for (i, node) in nodes.iter().enumerate() {
        if key(policy, node, k).is_none() {
            continue;
        }
        let Some(slot) = out.get_mut(n) else {
            break;
        };
        *slot = i;
        n += 1;
    }
    let Some(chosen) = out.get_mut(..n) else {
        return 0;
    };
    let key_of = |i: usize| nodes.get(i).and_then(|node| key(policy, node, k));
    // Insertion sort: few nodes, no allocation, stable (ties by index).
    for i in 1..chosen.len() {
        let mut j = i;
        while j > 0 && key_of(chosen[j]) < key_of(chosen[j - 1]) {
            chosen.swap(j, j - 1);
            j -= 1;
        }
    }
    n
}

/// The node a job of `k` tiles takes (node choice), if any can.
pub fn choose(policy: Policy, nodes: &[NodeView], k: u32) -> Option<usize> {
    nodes
        .iter()
        .enumerate()
        .filter_map(|(i, node)| Some((key(policy, node, k)?, i)))
        .min()
        .map(|(_, i)| i)
}

/// What a tile draws, in modeled time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileState {
    /// Held by a job: its first power value.
    Busy,
    /// Idle; it sleeps once the idle delay has passed.
    Idle {
        /// Since when, ns.
        since_ns: u64,
    },
    /// In the low-power state.
    Asleep,
}

/// Limits of `tile_idle_delay_us`.
pub const IDLE_DELAY_US: (u32, u32) = (0, 10_000_000);
/// Limits of `tile_wake_us`.
pub const WAKE_US: (u32, u32) = (0, 1_000_000);
/// Default power of an idle tile, milliwatts.
pub const DEFAULT_IDLE_MW: u32 = 30_000;
/// Default power of a sleeping tile, milliwatts.
pub const DEFAULT_SLEEP_MW: u32 = 3_000;
/// Default idle delay, microseconds.
pub const DEFAULT_IDLE_DELAY_US: u32 = 5_000;
/// Default wake latency, microseconds.
pub const DEFAULT_WAKE_US: u32 = 500;

/// The power model of the tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PowerModel {
    /// What an idle tile draws, milliwatts.
    pub idle_mw: u64,
    /// What a sleeping tile draws, milliwatts.
    pub sleep_mw: u64,
    /// How long a tile stays idle before it sleeps, ns.
    pub idle_delay_ns: u64,
    /// What waking a sleeping tile costs before a job can start on it, ns.
    pub wake_ns: u64,
}

impl PowerModel {
    /// The model of the module parameters `tile_idle_mw` (at most the
    /// lowest first power value of `topo`), `tile_sleep_mw` (at most the
    /// idle power), `tile_idle_delay_us` and `tile_wake_us`.
    pub fn from_values(
        topo: &TileTopology,
        idle_mw: u64,
        sleep_mw: u64,
        idle_delay_us: u64,
        wake_us: u64,
    ) -> Result<Self, ParamError> {
        let lowest = topo
            .type_power_mw
            .iter()
            .take(topo.types as usize)
            .copied()
            .min()
            .unwrap_or(0);
        let idle_mw = within("tile_idle_mw", idle_mw, (0, lowest))?;
        let sleep_mw = within("tile_sleep_mw", sleep_mw, (0, idle_mw))?;
        let delay = within("tile_idle_delay_us", idle_delay_us, IDLE_DELAY_US)?;
        let wake = within("tile_wake_us", wake_us, WAKE_US)?;
        Ok(Self {
            idle_mw: u64::from(idle_mw),
            sleep_mw: u64::from(sleep_mw),
            idle_delay_ns: u64::from(delay) * 1000,
            wake_ns: u64::from(wake) * 1000,
        })
    }
}

/// An energy account: power integrated over modeled time, exactly.
///
/// # Invariants
///
/// `rem_pj < 1000`; the energy drawn up to `at_ns` is `nj` nanojoules and
/// `rem_pj` picojoules (mW × ns = pJ).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Energy {
    nj: u64,
    rem_pj: u64,
    at_ns: u64,
}

impl Energy {
    /// An empty account standing at `now_ns`.
    pub fn new(now_ns: u64) -> Self {
        Self {
            nj: 0,
            rem_pj: 0,
            at_ns: now_ns,
        }
    }

    /// Adds `mw` from where the account stands to `until_ns` (nothing if
    /// that is not later); returns the nanoseconds added.
    pub fn add(&mut self, mw: u64, until_ns: u64) -> u64 {
        let ns = until_ns.saturating_sub(self.at_ns);
        // Saturating: 300 W for 60 000 s in one step.
        let pj = mw.saturating_mul(ns).saturating_add(self.rem_pj);
        self.nj = self.nj.saturating_add(pj / 1000);
        self.rem_pj = pj % 1000;
        self.at_ns = self.at_ns.max(until_ns);
        ns
    }

    /// Energy drawn, nanojoules.
    pub fn nj(&self) -> u64 {
        self.nj
    }

    /// Where the account stands, ns.
    pub fn at_ns(&self) -> u64 {
        self.at_ns
    }
}

/// One tile's power state, its energy account and how long it spent in
/// each state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TilePower {
    /// Its first power value, milliwatts.
    pub busy_mw: u64,
    /// Its state.
    pub state: TileState,
    /// Energy drawn.
    pub energy: Energy,
    /// Modeled time busy (waking included), idle and asleep, ns.
    pub busy_ns: u64,
    /// See `busy_ns`.
    pub idle_ns: u64,
    /// See `busy_ns`.
    pub asleep_ns: u64,
    /// Times it was woken.
    pub wakes: u64,
}

impl TilePower {
    /// An idle tile of first power `busy_mw`, its account at 0 at `now_ns`.
    pub fn new(busy_mw: u64, now_ns: u64) -> Self {
        Self {
            busy_mw,
            state: TileState::Idle { since_ns: now_ns },
            energy: Energy::new(now_ns),
            busy_ns: 0,
            idle_ns: 0,
            asleep_ns: 0,
            wakes: 0,
        }
    }

    /// When an idle tile goes to sleep; `None` if it is not idle.
    pub fn sleeps_at(&self, m: &PowerModel) -> Option<u64> {
        match self.state {
            TileState::Idle { since_ns } => Some(since_ns.saturating_add(m.idle_delay_ns)),
            _ => None,
        }
    }

    /// Brings the account up to `now_ns`, putting the tile to sleep at the
    /// end of its idle delay if that has come.
    pub fn advance(&mut self, m: &PowerModel, now_ns: u64) {
        if let Some(at) = self.sleeps_at(m).filter(|&at| at <= now_ns) {
            self.accrue(m, at);
            self.state = TileState::Asleep;
        }
        self.accrue(m, now_ns);
    }

    /// What it draws now, milliwatts.
    pub fn power_mw(&self, m: &PowerModel) -> u64 {
        match self.state {
            TileState::Busy => self.busy_mw,
            TileState::Idle { .. } => m.idle_mw,
            TileState::Asleep => m.sleep_mw,
        }
    }

    /// A job takes the tile at `now_ns`; returns when it can start (a
    /// sleeping tile wakes first, drawing its busy power meanwhile).
    pub fn take(&mut self, m: &PowerModel, now_ns: u64) -> u64 {
        self.advance(m, now_ns);
        let start = match self.state {
            TileState::Asleep => {
                self.wakes = self.wakes.saturating_add(1);
                now_ns.saturating_add(m.wake_ns)
            }
            _ => now_ns,
        };
        self.state = TileState::Busy;
        start
    }

    /// The job releases the tile at `now_ns`.
    pub fn release(&mut self, m: &PowerModel, now_ns: u64) {
        self.advance(m, now_ns);
        self.state = TileState::Idle { since_ns: now_ns };
    }

    /// Energy drawn up to where the account stands, microjoules.
    pub fn energy_uj(&self) -> u64 {
        self.energy.nj() / 1000
    }

    /// Adds the current state's power up to `until_ns`.
    fn accrue(&mut self, m: &PowerModel, until_ns: u64) {
        let ns = self.energy.add(self.power_mw(m), until_ns);
        let spent = match self.state {
            TileState::Busy => &mut self.busy_ns,
            TileState::Idle { .. } => &mut self.idle_ns,
            TileState::Asleep => &mut self.asleep_ns,
        };
        *spent = spent.saturating_add(ns);
    }
}

/// A placement's view of one candidate node, in the order tried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Candidate {
    /// The node.
    pub node: u8,
    /// Its idle tiles.
    pub idle: u8,
    /// The power it was ordered by (second or third power value), mW.
    pub power_mw: u64,
}

/// Where a job of `k` tiles went, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TilePlacement {
    /// The node it took.
    pub node: u32,
    /// Its tiles, one bit per tile index.
    pub mask: u32,
    /// When its tiles are awake, ns: its work may start then.
    pub start_ns: u64,
    /// Of its tiles, how many were asleep.
    pub woken: u32,
    /// The nodes that could take it, in the order tried.
    pub order: [Candidate; MAX_NODES],
    /// Entries of `order`.
    pub candidates: u32,
}

/// The tiles of a device as placement and the energy account see them:
/// which jobs hold each, what each draws, what each node's standby draws.
///
/// A device of one tile is shared: every job holds it (the device as it
/// was before tiles). With more, a tile is held by one job at a time.
///
/// # Invariants
///
/// `holders[t] > 0` exactly when `tiles[t].state` is [`TileState::Busy`];
/// every account stands at the same modeled time once [`Self::advance`]
/// has run; a node's standby is drawn while any of its tiles is awake.
#[derive(Clone, Copy, Debug)]
pub struct TileAccount {
    topo: TileTopology,
    model: PowerModel,
    tiles: [TilePower; MAX_TILES],
    holders: [u32; MAX_TILES],
    standby: [Energy; MAX_NODES],
    /// Modeled time each node's standby was drawn, ns.
    awake_ns: [u64; MAX_NODES],
}

impl TileAccount {
    /// Every tile of `topo` idle at `now_ns`, every account at 0.
    pub fn new(topo: TileTopology, model: PowerModel, now_ns: u64) -> Self {
        let mut tiles = [TilePower::new(0, now_ns); MAX_TILES];
        for (t, tile) in tiles.iter_mut().enumerate().take(topo.tiles() as usize) {
            let ty = topo.tile_type.get(t).copied().unwrap_or(0) as usize;
            tile.busy_mw = u64::from(topo.type_power_mw.get(ty).copied().unwrap_or(0));
        }
        Self {
            topo,
            model,
            tiles,
            holders: [0; MAX_TILES],
            standby: [Energy::new(now_ns); MAX_NODES],
            awake_ns: [0; MAX_NODES],
        }
    }

    /// The topology.
    pub fn topology(&self) -> &TileTopology {
        &self.topo
    }

    /// The power model.
    pub fn model(&self) -> &PowerModel {
        &self.model
    }

    /// Tiles are held by one job at a time (more than one tile).
    pub fn exclusive(&self) -> bool {
        self.topo.tiles() > 1
    }

    /// Whether a job of `k` tiles can ever be placed.
    pub fn fits(&self, k: u32) -> bool {
        self.topo.fits(k)
    }

    /// The tiles of node `n`, as indices.
    fn node_tiles(&self, n: u32) -> core::ops::Range<usize> {
        let per = self.topo.tiles_per_node as usize;
        let first = (n as usize).saturating_mul(per);
        first..first.saturating_add(per).min(MAX_TILES)
    }

    /// Whether node `n` draws its standby: some tile of it is awake.
    pub fn node_awake(&self, n: u32) -> bool {
        self.tiles
            .get(self.node_tiles(n))
            .is_some_and(|ts| ts.iter().any(|t| t.state != TileState::Asleep))
    }

    /// Brings every account up to `now_ns`. Tiles fall asleep at the end
    /// of their idle delay in modeled-time order, and a node stops drawing
    /// its standby the moment its last tile does.
    pub fn advance(&mut self, now_ns: u64) {
        let m = self.model;
        let count = self.topo.tiles() as usize;
        loop {
            let next = self
                .tiles
                .iter()
                .take(count)
                .enumerate()
                .filter_map(|(i, t)| Some((t.sleeps_at(&m)?, i)))
                .filter(|&(at, _)| at <= now_ns)
                .min();
            let until = next.map_or(now_ns, |(at, _)| at);
            self.accrue_standby(until);
            let Some((at, i)) = next else {
                break;
            };
            if let Some(t) = self.tiles.get_mut(i) {
                // Sleeps at `at`, within this loop's order.
                t.advance(&m, at);
            }
        }
        for t in self.tiles.iter_mut().take(count) {
            t.advance(&m, now_ns);
        }
    }

    /// Adds each node's standby up to `until_ns`, if it is awake.
    fn accrue_standby(&mut self, until_ns: u64) {
        for n in 0..self.topo.nodes {
            let awake = self.node_awake(n);
            let i = n as usize;
            let mw = match awake {
                true => u64::from(self.topo.standby_mw.get(i).copied().unwrap_or(0)),
                false => 0,
            };
            if let (Some(e), Some(ns)) = (self.standby.get_mut(i), self.awake_ns.get_mut(i)) {
                let added = e.add(mw, until_ns);
                if awake {
                    *ns = ns.saturating_add(added);
                }
            }
        }
    }

    /// Each node as placement sees it, into `out`; returns how many.
    pub fn views(&self, out: &mut [NodeView; MAX_NODES]) -> usize {
        self.views_within(self.topo.all_tiles(), out)
    }

    /// Each node as a job that may use only the tiles of `allowed` sees
    /// it (other tiles are never idle for it), into `out`; returns how
    /// many.
    fn views_within(&self, allowed: u32, out: &mut [NodeView; MAX_NODES]) -> usize {
        let exclusive = self.exclusive();
        let mut n = 0;
        for (node, view) in (0..self.topo.nodes).zip(out.iter_mut()) {
            let range = self.node_tiles(node);
            let mut v = NodeView {
                tiles: range.len() as u32,
                idle: 0,
                idle_power_mw: 0,
                standby_mw: u64::from(
                    self.topo
                        .standby_mw
                        .get(node as usize)
                        .copied()
                        .unwrap_or(0),
                ),
            };
            for t in range {
                let free = (!exclusive || self.holders.get(t).is_some_and(|&h| h == 0))
                    && allowed >> t & 1 == 1;
                if let (true, Some(tile)) = (free, self.tiles.get(t)) {
                    v.idle += 1;
                    v.idle_power_mw = v.idle_power_mw.saturating_add(tile.busy_mw);
                }
            }
            *view = v;
            n += 1;
        }
        n
    }

    /// Places a job of `k` tiles at `now_ns` by `policy` (the fit filter, node
    /// order and node choice): takes the `k` idle tiles of the lowest first
    /// power (then index) of the first node in order, waking those asleep.
    /// `None` if no node has `k` idle tiles now: the job waits.
    ///
    /// Under [`Policy::Power`] the idle tiles of every other node, which got no
    /// job, go to the low-power state at once, without waiting for the idle
    /// delay. Spreading leaves them to the delay.
    pub fn place(&mut self, policy: Policy, k: u32, now_ns: u64) -> Option<TilePlacement> {
        self.place_within(policy, k, self.topo.all_tiles(), now_ns)
    }

    /// [`TileAccount::place`] for a job that may use only the tiles of
    /// `allowed` (the tiles its file is authorized for): the others count
    /// as busy for it.
    pub fn place_within(
        &mut self,
        policy: Policy,
        k: u32,
        allowed: u32,
        now_ns: u64,
    ) -> Option<TilePlacement> {
        self.advance(now_ns);
        let mut views = [NodeView::EMPTY; MAX_NODES];
        let count = self.views_within(allowed, &mut views);
        let views = views.get(..count)?;
        let mut tried = [0usize; MAX_NODES];
        let candidates = order(policy, views, k, &mut tried);
        let node = *tried.get(..candidates)?.first()?;
        let mut p = TilePlacement {
            node: node as u32,
            mask: 0,
            start_ns: now_ns,
            woken: 0,
            order: [Candidate::default(); MAX_NODES],
            candidates: candidates as u32,
        };
        for (slot, &i) in p.order.iter_mut().zip(tried.iter().take(candidates)) {
            if let Some(v) = views.get(i) {
                *slot = Candidate {
                    node: i as u8,
                    idle: v.idle as u8,
                    power_mw: v.order_power_mw(),
                };
            }
        }
        let exclusive = self.exclusive();
        for _ in 0..k {
            let best = self
                .node_tiles(node as u32)
                .filter(|&t| !exclusive || self.holders.get(t).is_some_and(|&h| h == 0))
                .filter(|&t| allowed >> t & 1 == 1 && p.mask & (1 << t) == 0)
                .filter_map(|t| Some((self.tiles.get(t)?.busy_mw, t)))
                .min()?;
            p.mask |= 1 << best.1;
        }
        self.take(p.mask, now_ns, &mut p);
        if policy == Policy::Power {
            self.sleep_idle_except(p.node);
        }
        Some(p)
    }

    /// Puts the idle tiles of every node but `node` to sleep; the accounts
    /// stand at the moment of the placement already.
    fn sleep_idle_except(&mut self, node: u32) {
        let keep = self.node_tiles(node);
        let count = self.topo.tiles() as usize;
        for (t, tile) in self.tiles.iter_mut().enumerate().take(count) {
            if !keep.contains(&t) && matches!(tile.state, TileState::Idle { .. }) {
                tile.state = TileState::Asleep;
            }
        }
    }

    /// Calls `f` with each tile of `mask` and the number of jobs holding it.
    fn each_of(&mut self, mask: u32, mut f: impl FnMut(&mut TilePower, &mut u32)) {
        let count = self.topo.tiles() as usize;
        let tiles = self.tiles.iter_mut().zip(self.holders.iter_mut());
        for (t, (tile, h)) in tiles.enumerate().take(count) {
            if mask >> t & 1 == 1 {
                f(tile, h);
            }
        }
    }

    /// The tiles of `mask` are taken at `now_ns`.
    fn take(&mut self, mask: u32, now_ns: u64, p: &mut TilePlacement) {
        let m = self.model;
        self.each_of(mask, |tile, h| {
            if *h == 0 {
                let asleep = tile.state == TileState::Asleep;
                p.start_ns = p.start_ns.max(tile.take(&m, now_ns));
                p.woken += u32::from(asleep);
            }
            *h = h.saturating_add(1);
        });
    }

    /// The job holding the tiles of `mask` ended at `now_ns`.
    pub fn release(&mut self, mask: u32, now_ns: u64) {
        self.advance(now_ns);
        let m = self.model;
        self.each_of(mask, |tile, h| {
            *h = h.saturating_sub(1);
            if *h == 0 {
                tile.release(&m, now_ns);
            }
        });
    }

    /// Tile `t`.
    pub fn tile(&self, t: u32) -> Option<&TilePower> {
        self.tiles
            .get(..self.topo.tiles() as usize)?
            .get(t as usize)
    }

    /// What node `n` draws now (its standby if awake, and its tiles), mW.
    pub fn node_power_mw(&self, n: u32) -> u64 {
        let standby = match self.node_awake(n) {
            true => u64::from(self.topo.standby_mw.get(n as usize).copied().unwrap_or(0)),
            false => 0,
        };
        self.tiles
            .get(self.node_tiles(n))
            .map_or(0, |ts| {
                ts.iter()
                    .map(|t| t.power_mw(&self.model))
                    .fold(0, u64::saturating_add)
            })
            .saturating_add(standby)
    }

    /// Energy node `n`'s standby drew, nanojoules, and for how long, ns.
    pub fn standby(&self, n: u32) -> (u64, u64) {
        let i = n as usize;
        let nj = self.standby.get(i).map_or(0, Energy::nj);
        (nj, self.awake_ns.get(i).copied().unwrap_or(0))
    }

    /// Energy node `n` drew (standby and tiles), nanojoules.
    pub fn node_energy_nj(&self, n: u32) -> u64 {
        self.tiles
            .get(self.node_tiles(n))
            .map_or(0, |ts| {
                ts.iter()
                    .map(|t| t.energy.nj())
                    .fold(0, u64::saturating_add)
            })
            .saturating_add(self.standby(n).0)
    }

    /// Energy the device drew, nanojoules.
    pub fn energy_nj(&self) -> u64 {
        (0..self.topo.nodes)
            .map(|n| self.node_energy_nj(n))
            .fold(0, u64::saturating_add)
    }

    /// What the device draws now, mW.
    pub fn power_mw(&self) -> u64 {
        (0..self.topo.nodes)
            .map(|n| self.node_power_mw(n))
            .fold(0, u64::saturating_add)
    }

    /// The lower bound of the energy: the busy time alone at the tiles'
    /// first power values, nanojoules.
    pub fn busy_energy_nj(&self) -> u64 {
        self.tiles
            .iter()
            .take(self.topo.tiles() as usize)
            .map(|t| t.busy_mw.saturating_mul(t.busy_ns) / 1000)
            .fold(0, u64::saturating_add)
    }
}

/// The worked example of the standby charge, the cases the host tests and KUnit
/// run: four nodes of equal idle count with second power values 15, 20, 30 and
/// 50; node 3 (index 2) wholly idle with a standby of 25 goes after node 4.
/// (The example as first published gives the third power value as 61, which
/// does not follow from 30 + 25; the order 1, 2, 4, 3 does, and is what is
/// checked.) `Err(name)` names the first case that fails.
pub fn document_cases() -> Result<(), &'static str> {
    let node = |tiles, idle_power_mw, standby_mw| NodeView {
        tiles,
        idle: 2,
        idle_power_mw,
        standby_mw,
    };
    let nodes = [
        node(4, 15, 10),
        node(4, 20, 10),
        node(2, 30, 25),
        node(4, 50, 10),
    ];
    let mut out = [0usize; 4];
    let n = order(Policy::Power, &nodes, 2, &mut out);
    // Two pending tasks of 2 tiles: the first takes node 1, which has no
    // idle tile left; placed next, the second takes node 2.
    let mut after_first = nodes;
    after_first[0].idle = 0;
    after_first[0].idle_power_mw = 0;
    // Second power values 18, 20, 5 and 7 of nodes a to d, none wholly idle.
    let abcd = [18, 20, 5, 7].map(|mw| NodeView {
        tiles: 4,
        idle: 2,
        idle_power_mw: mw,
        standby_mw: 10,
    });
    let mut by_power = [0usize; 4];
    let ordered = order(Policy::Power, &abcd, 1, &mut by_power);
    // The fit filter for 3 tiles: a node with 3 idle is kept, one with 2
    // dropped.
    let filter = [3, 2].map(|idle| NodeView {
        tiles: 4,
        idle,
        idle_power_mw: 10 * u64::from(idle),
        standby_mw: 10,
    });
    let mut kept = [usize::MAX; 2];
    let kept_n = order(Policy::Power, &filter, 3, &mut kept);
    // w1 to w7 with 1, 5, 5, 5, 5, 8 and 8 idle tiles of 8, listed out of
    // order, with powers that would order them otherwise (w1 the highest,
    // w6 and w7 the lowest): the groups {w1}, {w2..w5}, {w6, w7} go by idle
    // count ascending, each group by its power (w6 and w7 wholly idle: 6
    // and 5 plus 10 standby).
    let w =
        [(8, 6), (5, 30), (1, 90), (5, 10), (5, 40), (8, 5), (5, 20)].map(|(idle, mw)| NodeView {
            tiles: 8,
            idle,
            idle_power_mw: mw,
            standby_mw: 10,
        });
    let mut by_group = [0usize; 7];
    let grouped = order(Policy::Power, &w, 1, &mut by_group);
    let cases: [(&'static str, bool); 13] = [
        (
            "node 3 is wholly idle: 30 + 25",
            nodes[2].order_power_mw() == 55,
        ),
        (
            "the others keep their second power",
            nodes[3].order_power_mw() == 50,
        ),
        ("every node can take 2 tiles", n == 4),
        ("order 1, 2, 4, 3", out == [0, 1, 3, 2]),
        (
            "node choice takes node 1",
            choose(Policy::Power, &nodes, 2) == Some(0),
        ),
        (
            "3 tiles: no node",
            choose(Policy::Power, &nodes, 3).is_none(),
        ),
        (
            "two pending tasks: nodes 1 and 2",
            choose(Policy::Power, &after_first, 2) == Some(1),
        ),
        (
            "second power 2 + 7 + 9 + 12 = 30",
            second_power_of_four_types() == Some((30, 55)),
        ),
        ("18, 20, 5, 7: all four ordered", ordered == 4),
        ("18, 20, 5, 7: order c, d, a, b", by_power == [2, 3, 0, 1]),
        (
            "3 tiles: the node with 3 idle kept, the one with 2 dropped",
            kept_n == 1 && kept[0] == 0,
        ),
        ("w1 to w7: all seven ordered", grouped == 7),
        (
            "w1 to w7: {w1}, then {w5, w4, w3, w2}, then {w7, w6}",
            by_group == [2, 3, 6, 1, 4, 5, 0],
        ),
    ];
    super::device_memory::first_failing(&cases)
}

/// The second power value of one node of four idle tiles whose types draw
/// 2, 7, 9 and 12 mW when busy, as placement reads it from the tile
/// account, and its third (the standby charge of 25 mW added, since every
/// tile is idle).
fn second_power_of_four_types() -> Option<(u64, u64)> {
    let topo = TileTopology::from_values(4, 1, 4, &[0, 1, 2, 3], &[2, 7, 9, 12], &[25]).ok()?;
    let model = PowerModel::from_values(&topo, 1, 1, 0, 0).ok()?;
    let account = TileAccount::new(topo, model, 0);
    let mut views = [NodeView::EMPTY; MAX_NODES];
    let count = account.views(&mut views);
    let node = views.get(..count)?.first()?;
    Some((node.idle_power_mw, node.order_power_mw()))
}

#[cfg(test)]
mod tests {
    use super::super::rng::Rng;
    use super::*;

    #[test]
    fn the_documents_example() {
        assert_eq!(document_cases(), Ok(()));
    }

    #[test]
    fn tile_topologies_are_checked() {
        // The default: one node, one tile of type 0, today's device.
        let t = TileTopology::from_values(4, 1, 1, &[], &[], &[]).unwrap();
        assert_eq!((t.tiles(), t.modules_per_tile, t.types), (1, 4, 1));
        assert_eq!((t.type_power_mw[0], t.standby_mw[0]), (150_000, 25_000));
        // 4 nodes x 4 tiles of two types over 16 modules.
        let types = [0, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1];
        let t = TileTopology::from_values(16, 4, 4, &types, &[100, 60], &[25, 20, 20, 25]);
        let t = t.unwrap();
        assert_eq!((t.tiles(), t.modules_per_tile, t.tile_type[1]), (16, 1, 1));
        assert_eq!(t.standby_mw[1], 20);
        // Refused: uneven, a wrong count, an unknown type, a zero power.
        assert_eq!(
            TileTopology::from_values(4, 3, 1, &[], &[], &[]),
            Err(TopologyError::Uneven {
                modules: 4,
                tiles: 3
            })
        );
        assert!(matches!(
            TileTopology::from_values(4, 2, 1, &[0], &[], &[]),
            Err(TopologyError::Count {
                field: "tile_type",
                ..
            })
        ));
        assert_eq!(
            TileTopology::from_values(4, 2, 1, &[0, 2], &[1, 2], &[]),
            Err(TopologyError::UnknownType { tile: 1, ty: 2 })
        );
        assert_eq!(
            TileTopology::from_values(4, 2, 1, &[], &[0], &[]),
            Err(TopologyError::BadPower {
                field: "type_power_mw",
                index: 0,
                mw: 0
            })
        );
        assert_eq!(
            TileTopology::from_values(4, 2, 1, &[], &[], &[5, 0]),
            Err(TopologyError::BadPower {
                field: "node_standby_mw",
                index: 1,
                mw: 0
            })
        );
        assert_eq!(
            TileTopology::from_values(64, 16, 4, &[], &[], &[]),
            Err(TopologyError::TooMany { tiles: 64 })
        );
        assert!(matches!(
            TileTopology::from_values(4, 0, 1, &[], &[], &[]),
            Err(TopologyError::Param(ParamError { field: "nodes", .. }))
        ));
        // A value past 32 bits is out of range as given, not cut short.
        assert_eq!(
            TileTopology::from_values(4, 1 << 32, 1, &[], &[], &[]),
            Err(TopologyError::Param(ParamError {
                field: "nodes",
                value: 1 << 32,
                min: 1,
                max: 16
            }))
        );
    }

    #[test]
    fn groups_by_idle_count_then_power() {
        let n = |tiles, idle, idle_power_mw| NodeView {
            tiles,
            idle,
            idle_power_mw,
            standby_mw: 100,
        };
        // Idle counts 3, 1, 2, 0: the node with 0 is dropped, 1 first.
        let nodes = [n(4, 3, 30), n(4, 1, 5), n(4, 2, 10), n(4, 0, 0)];
        let mut out = [0usize; 4];
        assert_eq!(order(Policy::Power, &nodes, 1, &mut out), 3);
        assert_eq!(out[..3], [1, 2, 0]);
        // Two tiles: the node with one idle tile is dropped too.
        assert_eq!(order(Policy::Power, &nodes, 2, &mut out), 2);
        assert_eq!(out[..2], [2, 0]);
        // Spread: the most idle first.
        assert_eq!(order(Policy::Spread, &nodes, 1, &mut out), 3);
        assert_eq!(out[..3], [0, 2, 1]);
        assert_eq!(choose(Policy::Power, &nodes, 0), None);
    }

    #[test]
    fn random_nodes_chosen_node_fits_and_order_is_consistent() {
        let mut rng = Rng::new(7);
        for _ in 0..2000 {
            let count = 1 + rng.below(8) as usize;
            let mut nodes = [NodeView {
                tiles: 0,
                idle: 0,
                idle_power_mw: 0,
                standby_mw: 0,
            }; 8];
            for node in nodes.iter_mut().take(count) {
                let tiles = 1 + rng.below(4);
                let idle = rng.below(tiles + 1);
                *node = NodeView {
                    tiles,
                    idle,
                    idle_power_mw: u64::from(idle) * u64::from(5 + rng.below(20)),
                    standby_mw: u64::from(rng.below(40)),
                };
            }
            let nodes = &nodes[..count];
            let k = 1 + rng.below(4);
            for policy in [Policy::Power, Policy::Spread] {
                let mut out = [0usize; 8];
                let n = order(policy, nodes, k, &mut out);
                // Exactly the nodes with k idle tiles, each once.
                assert_eq!(n, nodes.iter().filter(|x| x.idle >= k).count());
                for w in out[..n].windows(2) {
                    let (a, b) = (key(policy, &nodes[w[0]], k), key(policy, &nodes[w[1]], k));
                    assert!(a < b || (a == b && w[0] < w[1]), "not a total order");
                }
                let chosen = choose(policy, nodes, k);
                assert_eq!(chosen, (n > 0).then(|| out[0]));
                if let Some(c) = chosen {
                    assert!(nodes[c].idle >= k);
                }
            }
        }
    }

    #[test]
    fn a_tile_sleeps_after_the_idle_delay_and_wakes_with_a_latency() {
        let m = PowerModel {
            idle_mw: 10,
            sleep_mw: 1,
            idle_delay_ns: 1_000_000,
            wake_ns: 200_000,
        };
        let mut t = TilePower::new(100, 0);
        // Busy 2 ms at 100 mW: 200 uJ.
        assert_eq!(t.take(&m, 0), 0);
        t.release(&m, 2_000_000);
        assert_eq!(t.energy_uj(), 200);
        // Idle 1 ms at 10 mW (10 uJ), then asleep 3 ms at 1 mW (3 uJ).
        t.advance(&m, 6_000_000);
        assert_eq!(t.state, TileState::Asleep);
        assert_eq!(t.energy_uj(), 213);
        // A job landing on it waits for it to wake.
        assert_eq!(t.take(&m, 6_000_000), 6_200_000);
        // The energy only grows.
        let before = t.energy_uj();
        t.advance(&m, 5_000_000);
        assert_eq!(t.energy_uj(), before);
    }

    /// 2 nodes x 2 tiles: types 0 (100 mW) and 1 (60 mW), standby 25 mW.
    fn account() -> TileAccount {
        let topo =
            TileTopology::from_values(4, 2, 2, &[0, 1, 0, 0], &[100, 60], &[25, 25]).unwrap();
        let m = PowerModel::from_values(&topo, 10, 1, 1_000, 200).unwrap();
        TileAccount::new(topo, m, 0)
    }

    #[test]
    fn power_models_are_checked() {
        let topo = TileTopology::from_values(4, 2, 2, &[0, 1, 0, 0], &[100, 60], &[]).unwrap();
        assert!(PowerModel::from_values(&topo, 60, 60, 0, 0).is_ok());
        let field = |r: Result<PowerModel, ParamError>| r.unwrap_err().field;
        assert_eq!(
            field(PowerModel::from_values(&topo, 61, 1, 0, 0)),
            "tile_idle_mw"
        );
        assert_eq!(
            field(PowerModel::from_values(&topo, 10, 11, 0, 0)),
            "tile_sleep_mw"
        );
        let long = u64::from(IDLE_DELAY_US.1) + 1;
        assert_eq!(
            field(PowerModel::from_values(&topo, 10, 1, long, 0)),
            "tile_idle_delay_us"
        );
        let slow = u64::from(WAKE_US.1) + 1;
        assert_eq!(
            field(PowerModel::from_values(&topo, 10, 1, 0, slow)),
            "tile_wake_us"
        );
    }

    #[test]
    fn placement_holds_tiles_and_fills_the_nearly_full_node() {
        let mut a = account();
        assert!(a.exclusive() && a.fits(2) && !a.fits(3) && !a.fits(0));
        // Both nodes wholly idle: node 0 (160 + 25) before node 1 (200 + 25);
        // its cheaper tile, tile 1 (60 mW).
        let p = a.place(Policy::Power, 1, 0).unwrap();
        assert_eq!((p.node, p.mask, p.start_ns, p.candidates), (0, 0b10, 0, 2));
        assert_eq!(
            p.order[0],
            Candidate {
                node: 0,
                idle: 2,
                power_mw: 185
            }
        );
        // Node 0 now has one idle tile: it fills first.
        let p = a.place(Policy::Power, 1, 10).unwrap();
        assert_eq!((p.node, p.mask), (0, 0b01));
        // Two tiles: only node 1 has them.
        let p = a.place(Policy::Power, 2, 20).unwrap();
        assert_eq!((p.node, p.mask), (1, 0b1100));
        assert!(a.place(Policy::Power, 1, 30).is_none());
        // Spread takes the least loaded node instead.
        a.release(0b1111, 40);
        let p = a.place(Policy::Spread, 1, 50).unwrap();
        let q = a.place(Policy::Spread, 1, 60).unwrap();
        assert_ne!(p.node, q.node);
    }

    #[test]
    fn one_tile_is_shared() {
        let topo = TileTopology::from_values(4, 1, 1, &[], &[], &[]).unwrap();
        let m = PowerModel::from_values(&topo, 10, 1, 1_000, 0).unwrap();
        let mut a = TileAccount::new(topo, m, 0);
        assert!(!a.exclusive() && a.fits(1) && !a.fits(2));
        let p = a.place(Policy::Power, 1, 0).unwrap();
        let q = a.place(Policy::Power, 1, 0).unwrap();
        assert_eq!((p.mask, q.mask), (1, 1));
        // Busy until both jobs let it go.
        a.release(1, 1_000);
        assert_eq!(a.tile(0).unwrap().state, TileState::Busy);
        a.release(1, 2_000);
        assert_eq!(
            a.tile(0).unwrap().state,
            TileState::Idle { since_ns: 2_000 }
        );
    }

    #[test]
    fn sleeping_nodes_drop_their_standby_and_energy_is_the_integral() {
        const MS: u64 = 1_000_000;
        let mut a = account();
        // Tile 1 busy from 0 to 5 ms; tile 0 sleeps at 1 ms. Spreading
        // leaves node 1 idle until its delay ends, at 1 ms too.
        a.place(Policy::Spread, 1, 0).unwrap();
        a.advance(3 * MS);
        assert!(a.node_awake(0) && !a.node_awake(1));
        assert_eq!(a.tile(0).unwrap().state, TileState::Asleep);
        assert_eq!(a.node_power_mw(1), 2);
        a.release(0b10, 5 * MS);
        a.advance(10 * MS);
        // Tile 1 sleeps at 6 ms: node 0's standby ran 0..6 ms, node 1's 0..1.
        assert_eq!(a.standby(0), (25 * 6 * 1000, 6 * MS));
        assert_eq!(a.standby(1), (25 * 1000, MS));
        for t in 0..4 {
            let tile = a.tile(t).unwrap();
            let (busy, idle, asleep) = (tile.busy_ns, tile.idle_ns, tile.asleep_ns);
            assert_eq!(busy + idle + asleep, 10 * MS);
            let pj = tile.busy_mw * busy + 10 * idle + asleep;
            assert_eq!(tile.energy.nj(), pj / 1000);
        }
        assert_eq!(a.tile(1).unwrap().busy_ns, 5 * MS);
        assert_eq!(a.busy_energy_nj(), 60 * 5 * 1000);
        let tiles: u64 = (0..4).map(|t| a.tile(t).unwrap().energy.nj()).sum();
        assert_eq!(a.energy_nj(), tiles + 25 * 7 * 1000);
        // A job landing on sleeping tiles pays the wake latency.
        let p = a.place(Policy::Power, 2, 10 * MS).unwrap();
        assert_eq!((p.start_ns, p.woken), (10 * MS + 200_000, 2));
    }

    #[test]
    fn power_placement_puts_the_nodes_without_a_job_to_sleep() {
        const MS: u64 = 1_000_000;
        let mut a = account();
        // Node 1 is busy, then idle from 1 ms; a job placed on node 0 at
        // 1.5 ms puts node 1's idle tiles to sleep at once (the low-power
        // state).
        let p = a.place(Policy::Power, 1, 0).unwrap();
        assert_eq!(p.node, 0);
        let q = a.place(Policy::Power, 2, 0).unwrap();
        assert_eq!(q.node, 1);
        a.release(q.mask, MS);
        a.release(p.mask, MS);
        a.place(Policy::Power, 1, MS + MS / 2).unwrap();
        assert!(!a.node_awake(1));
        assert_eq!(a.tile(2).unwrap().state, TileState::Asleep);
        assert_eq!(a.standby(1), (25 * 1500, MS + MS / 2));
        // Spreading leaves them to the idle delay.
        let mut b = account();
        let p = b.place(Policy::Spread, 1, 0).unwrap();
        b.release(p.mask, MS / 2);
        b.place(Policy::Spread, 1, MS / 2).unwrap();
        assert!(b.node_awake(0) && b.node_awake(1));
    }

    /// A job limited to some tiles gets only those, waits exactly when no
    /// node has `k` of them idle, and can ever be placed exactly when some
    /// node has `k` of them.
    #[test]
    fn placements_within_allowed_tiles() {
        let topo = *account().topology();
        let per = topo.tiles_per_node;
        let all = topo.all_tiles();
        assert_eq!(all.count_ones(), topo.tiles());
        for allowed in 0..=all {
            for k in 1..=per + 1 {
                let some_node = (0..topo.nodes)
                    .any(|n| (allowed >> (n * per) & ((1 << per) - 1)).count_ones() >= k);
                assert_eq!(topo.fits_within(k, allowed), some_node && k <= per);
                let mut a = account();
                // Tile 0 is busy with a job of its own.
                let first = a.place_within(Policy::Power, 1, 1, 0).unwrap();
                assert_eq!(first.mask, 1);
                let free = allowed & !1;
                let placeable = (0..topo.nodes)
                    .any(|n| (free >> (n * per) & ((1 << per) - 1)).count_ones() >= k);
                match a.place_within(Policy::Power, k, allowed, 10) {
                    Some(p) => {
                        assert!(placeable, "allowed {allowed:#x} k {k}");
                        assert_eq!(p.mask & !free, 0, "allowed {allowed:#x} k {k}");
                        assert_eq!(p.mask.count_ones(), k);
                    }
                    None => assert!(!placeable, "allowed {allowed:#x} k {k}"),
                }
            }
        }
    }

    /// A reservation takes tiles of `available` only, as many as asked
    /// for or all there are, filling the node with most of them first.
    #[test]
    fn reservations_keep_a_nodes_tiles_together() {
        let topo = *account().topology();
        let per = topo.tiles_per_node;
        let all = topo.all_tiles();
        for n in 0..topo.nodes {
            assert_eq!(topo.node_mask(n), ((1 << per) - 1) << (n * per));
        }
        assert_eq!(topo.node_mask(topo.nodes), 0);
        let on_node = |mask: u32| {
            (0..topo.nodes)
                .map(|n| (topo.node_mask(n) & mask).count_ones())
                .max()
                .unwrap_or(0)
        };
        for available in 0..=all {
            for want in 0..=topo.tiles() + 1 {
                let got = topo.reserve(available, want);
                // Usable: enough tiles, and one node that holds the
                // environment's largest job.
                let usable = available.count_ones() >= want && on_node(available) >= want.min(per);
                assert_eq!(got.is_some(), usable, "{available:#x} {want}");
                let Some(got) = got else {
                    continue;
                };
                assert_eq!(got & !available, 0, "{available:#x} {want}");
                assert_eq!(got.count_ones(), want);
                assert!(
                    on_node(got) >= want.min(per),
                    "{available:#x} {want}: {got:#x}"
                );
                // Every job it may run fits on it.
                for k in 1..=want.min(per) {
                    assert!(topo.fits_within(k, got));
                }
            }
        }
        // Two tiles asked of two nodes with one free tile each: no
        // reservation (its two-tile job could never run on it).
        assert_eq!(topo.reserve(1 | 1 << per, 2), None);
    }

    #[test]
    fn a_job_runs_on_its_own_reservation_and_never_on_anothers() {
        let topo = *account().topology();
        let per = topo.tiles_per_node;
        let node0 = topo.node_mask(0);
        let node1 = topo.node_mask(1);
        let all = topo.all_tiles();
        let r = |own, others| Reserved { own, others };
        // Nothing reserved: the file's tiles as they are.
        assert_eq!(topo.job_tiles(2, all, r(0, 0)), Some(all));
        // Fits on its own: confined there.
        assert_eq!(topo.job_tiles(2, all, r(node1, node0)), Some(node1));
        // Larger than its own: anywhere no other environment reserved.
        assert_eq!(
            topo.job_tiles(per, all, r(0b1 << per, node0)),
            Some(all & !node0)
        );
        // Fits only with another's tiles: refused.
        assert_eq!(topo.job_tiles(per, node0, r(0, 0b1)), None);
        // Never fits on its file's tiles: left to the engine's EACCES.
        assert_eq!(topo.job_tiles(2, 0b1, r(0, 0b1)), Some(0b1));
        // Its own tiles only count where its file may use them.
        assert_eq!(topo.job_tiles(1, node0, r(node1, 0)), Some(node0));
    }

    #[test]
    fn random_placements_keep_the_books() {
        let mut rng = Rng::new(11);
        let mut a = account();
        let mut held: [(u32, u64); 8] = [(0, 0); 8];
        let mut now = 0u64;
        let mut last = 0u64;
        for _ in 0..5000 {
            now += u64::from(rng.below(700));
            let i = rng.below(8) as usize;
            match held[i].0 {
                0 => {
                    let k = 1 + rng.below(2);
                    let policy = match rng.below(2) {
                        0 => Policy::Power,
                        _ => Policy::Spread,
                    };
                    if let Some(p) = a.place(policy, k, now) {
                        assert_eq!(p.mask.count_ones(), k);
                        assert_eq!(p.mask & held.iter().fold(0, |m, h| m | h.0), 0);
                        let node_tiles = 0b11 << (2 * p.node);
                        assert_eq!(p.mask & !node_tiles, 0, "tiles of one node");
                        assert!(p.start_ns >= now);
                        held[i] = (p.mask, now);
                    }
                }
                mask => {
                    a.release(mask, now);
                    held[i] = (0, 0);
                }
            }
            a.advance(now);
            let e = a.energy_nj();
            assert!(e >= last, "energy only grows");
            last = e;
        }
    }
}
