// SPDX-License-Identifier: GPL-2.0

//! Power-aware placement over tiles: which node's tiles a job that needs
//! `k` tiles gets, and what the tiles draw in modeled time.
//!
//! The device's tiles are grouped into nodes that share a standby power.
//! Each tile has a type, and each type a *first power value* (what a tile
//! of it draws while it runs a job). For a job needing `k` tiles:
//!
//! 1. nodes with fewer than `k` idle tiles are dropped (a fully busy node
//!    has none);
//! 2. the others are grouped by their idle-tile count, groups in ascending
//!    order (nearly full nodes fill first);
//! 3. inside a group, nodes go by *second power value*, the sum of the
//!    first power values of their idle tiles, ascending;
//! 4. a node whose tiles are all idle adds its standby power to that sum
//!    (its *third power value*) and is ordered by it;
//! 5. the job takes the first node in this order: its `k` idle tiles of
//!    the lowest first power (then the lowest index).
//!
//! `Spread` is the comparison policy: the node with the most idle tiles
//! first, the way a least-loaded balancer spreads work.
//!
//! Rule 6, the low-power state, is [`TilePower`]: a tile idle for the idle
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
    /// A power of 0.
    ZeroPower {
        /// The parameter.
        field: &'static str,
        /// Its entry.
        index: u32,
    },
}

impl TileTopology {
    /// The topology of the module parameters: `nodes` × `tiles_per_node`
    /// tiles over `modules` modules; `tile_type` (one per tile, or none:
    /// all type 0), `type_power_mw` (one per type, or none: one type of
    /// [`DEFAULT_TYPE_POWER_MW`]), `node_standby_mw` (one per node, or
    /// none: [`DEFAULT_STANDBY_MW`] each).
    pub fn from_values(
        modules: u32,
        nodes: u32,
        tiles_per_node: u32,
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
                if mw == 0 {
                    return Err(TopologyError::ZeroPower {
                        field,
                        index: i as u32,
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
    /// The power it is ordered by inside its group: the second power value,
    /// plus the standby power when every tile is idle (the third power
    /// value, rule 4).
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
    /// Rules 1 to 5: nearly full nodes first, then the lowest power.
    Power,
    /// The node with the most idle tiles first (least loaded).
    Spread,
}

/// The key `policy` orders a node by (smaller first); `None` if the node
/// cannot take a job of `k` tiles (rule 1).
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

/// The node a job of `k` tiles takes (rule 5), if any can.
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

/// One tile's power state and energy account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TilePower {
    /// Its first power value, milliwatts.
    pub busy_mw: u64,
    /// Its state.
    pub state: TileState,
    /// Energy drawn up to `at_ns`: nanojoules, and the picojoules below
    /// one (mW × ns = pJ), so the sum is exact.
    energy_nj: u64,
    rem_pj: u64,
    /// Where the account stands.
    at_ns: u64,
}

impl TilePower {
    /// An idle tile of first power `busy_mw`, its account at 0 at `now_ns`.
    pub fn new(busy_mw: u64, now_ns: u64) -> Self {
        Self {
            busy_mw,
            state: TileState::Idle { since_ns: now_ns },
            energy_nj: 0,
            rem_pj: 0,
            at_ns: now_ns,
        }
    }

    /// Brings the account up to `now_ns`, putting the tile to sleep at the
    /// end of its idle delay if that passed.
    pub fn advance(&mut self, m: &PowerModel, now_ns: u64) {
        if now_ns <= self.at_ns {
            return;
        }
        if let TileState::Idle { since_ns } = self.state {
            let sleeps_at = since_ns.saturating_add(m.idle_delay_ns);
            if sleeps_at < now_ns {
                let idle_until = sleeps_at.max(self.at_ns);
                self.add(m.idle_mw, idle_until);
                self.state = TileState::Asleep;
            }
        }
        let mw = self.power_mw(m);
        self.add(mw, now_ns);
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
            TileState::Asleep => now_ns.saturating_add(m.wake_ns),
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
        self.energy_nj / 1000
    }

    /// Adds `mw` from where the account stands to `until_ns`.
    fn add(&mut self, mw: u64, until_ns: u64) {
        let ns = until_ns.saturating_sub(self.at_ns);
        // mW × ns = pJ (saturating: 300 W for 60 000 s in one step).
        let pj = mw.saturating_mul(ns).saturating_add(self.rem_pj);
        self.energy_nj = self.energy_nj.saturating_add(pj / 1000);
        self.rem_pj = pj % 1000;
        self.at_ns = self.at_ns.max(until_ns);
    }
}

/// The document's worked example of rule 4, the cases the host tests and
/// KUnit run: four nodes of equal idle count with second power values 15,
/// 20, 30 and 50; node 3 (index 2) wholly idle with a standby of 25 goes
/// after node 4. (The document writes its third power value as 61, which
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
    let cases: [(&'static str, bool); 6] = [
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
            "rule 5 takes node 1",
            choose(Policy::Power, &nodes, 2) == Some(0),
        ),
        (
            "3 tiles: no node",
            choose(Policy::Power, &nodes, 3).is_none(),
        ),
    ];
    super::device_memory::first_failing(&cases)
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
            Err(TopologyError::ZeroPower {
                field: "type_power_mw",
                index: 0
            })
        );
        assert_eq!(
            TileTopology::from_values(4, 2, 1, &[], &[], &[5, 0]),
            Err(TopologyError::ZeroPower {
                field: "node_standby_mw",
                index: 1
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
}
