// SPDX-License-Identifier: GPL-2.0

//! Provider enrolment: which of the device's tiles are in the pool, and
//! for whom.
//!
//! A *provider* is a node of the device's topology, the pooling
//! document's physical machine: its tiles serve jobs only once they are in
//! the pool. The provider's side makes an enrolment code for it (`code
//! node N` in the subsystem's `providers` attribute, shown once); the
//! pool's administrator enters it (`enrol node N CODE`, for every user, or
//! `enrol node N CODE PROJECT`, for that project's members, once per
//! project) and every tile of the node joins the pool; `revoke node N`
//! takes them out again: no job submitted afterwards may use them, the
//! jobs accepted before run on, and the code is void. A single tile may be
//! a provider of its own (`code T`, `enrol T CODE`, `revoke T`): the
//! document splits and isolates a machine's GPUs before allocating them,
//! and a part of a node may be offered alone. The module parameter `tile_enrolment` says where tiles start:
//! in the pool for everyone (0, the default: a device without providers'
//! codes behaves as before) or outside it (1: nothing runs until a code
//! is entered).
//!
//! Codes are entered in configfs, by root, rather than by a project's
//! owner through an ioctl: the code is a secret between the provider and
//! whoever administers the pool, and entering it decides what the whole
//! device offers, not what one project holds.
//!
//! This is not the per-file credential of [`crate::auth`] (a file
//! presenting a code before its jobs may run): that decides *who* may use
//! the tiles of the pool, this *which* tiles are in it. A job may use a
//! tile that both allow.

use kernel::{
    fmt::{
        self,
        Write, //
    },
    page::PAGE_SIZE,
    prelude::*,
    sync::atomic::ordering,
};

use super::{
    show,
    Book,
    Ledger,
    ProjectEntry, //
};
use crate::auth::{
    forget,
    is_code_of,
    new_code,
    HASH_BYTES, //
};
use crate::vgsched_core::{
    projects::{
        ProviderCommand,
        ProviderId,
        CODE_BYTES, //
    },
    tiles::{
        low_bits,
        MAX_TILES, //
    },
};

/// One provider, a node or a tile: its enrolment code. Whom its tiles
/// serve is kept elsewhere, once per tile: every user in
/// `Book::everyone_tiles`, the projects they were entered for in their own
/// mask (`ProjectEntry::tiles`).
pub(super) struct Provider {
    /// The hash of its valid code.
    code: Option<[u8; HASH_BYTES]>,
    /// A new code, until it is shown once.
    unshown: Option<[u8; CODE_BYTES]>,
}

/// A code not yet shown does not outlive its provider's state: replaced
/// (a revocation) or dropped with the device, it is overwritten first.
impl Drop for Provider {
    fn drop(&mut self) {
        if let Some(code) = self.unshown.as_mut() {
            forget(code);
        }
    }
}

impl Provider {
    /// A provider without a code (at load, or revoked).
    const NONE: Self = Self {
        code: None,
        unshown: None,
    };
}

/// The providers of a device of up to [`MAX_TILES`] tiles, or of as many
/// nodes (a node has one tile at least).
pub(super) type Providers = [Provider; MAX_TILES];

/// The providers of a device at load: none has a code.
pub(super) fn providers_at_load() -> Providers {
    core::array::from_fn(|_| Provider::NONE)
}

impl Book {
    /// The tiles of the pool `uid`'s jobs may be placed on: those that
    /// serve every user and those enrolled into `uid`'s project; for root,
    /// every tile in the pool.
    pub(crate) fn pool_tiles(&self, uid: u32) -> u32 {
        let all = self.all_tiles();
        // Every tile serves everyone (the default): nothing to look up.
        let everyone = self.everyone();
        if everyone == all {
            return all;
        }
        let ledger = self.ledger.lock();
        let projects = ledger.projects.iter();
        let enrolled = match uid {
            0 => projects.fold(0, |mask, p| mask | p.tiles),
            _ => projects
                .filter(|p| p.role_of(uid).is_some())
                .fold(0, |mask, p| mask | p.tiles),
        };
        (everyone | enrolled) & all
    }

    /// The tiles in the pool for every user, as a mask.
    pub(super) fn everyone(&self) -> u32 {
        self.everyone_tiles.load(ordering::Relaxed)
    }

    /// Changes the tiles in the pool for every user; the caller holds the
    /// ledger's lock, which orders every change.
    fn set_everyone(&self, mask: u32) {
        self.everyone_tiles.store(mask, ordering::Relaxed);
    }

    /// Every tile of the device, as a mask.
    fn all_tiles(&self) -> u32 {
        low_bits(self.tiles)
    }

    /// The tiles provider `who` enrols.
    fn tiles_of(&self, who: ProviderId) -> u32 {
        match who {
            ProviderId::Node(n) => self.topology.node_mask(n),
            ProviderId::Tile(t) => 1u32.checked_shl(t).unwrap_or(0),
        }
    }

    /// Carries out a command written to `providers`: `EINVAL` for a
    /// malformed one, `EACCES` for a code that is not the provider's valid
    /// one (or none is), `ENOENT` for an unknown project. Enrolment and
    /// revocation change the tiles a waiting `START` is admitted against:
    /// it is woken.
    pub(super) fn provider_command(&self, line: &[u8]) -> Result {
        let command =
            ProviderCommand::parse(line, self.topology.nodes, self.tiles).ok_or(EINVAL)?;
        let mut ledger = self.ledger.lock();
        match command {
            ProviderCommand::Code { who } => {
                let p = provider(&mut ledger, who)?;
                let (mut code, hash) = new_code();
                p.code = Some(hash);
                // A code replaced before it was shown is overwritten.
                if let Some(old) = p.unshown.as_mut() {
                    forget(old);
                }
                p.unshown = Some(code);
                forget(&mut code);
            }
            ProviderCommand::Enrol {
                who,
                mut code,
                project,
            } => {
                let valid = provider(&mut ledger, who)?
                    .code
                    .is_some_and(|h| is_code_of(&code, &h));
                forget(&mut code);
                if !valid {
                    return Err(EACCES);
                }
                let tiles = self.tiles_of(who);
                match project {
                    None => self.set_everyone(self.everyone() | tiles),
                    Some(name) => {
                        let p = ledger
                            .projects
                            .iter_mut()
                            .find(|p| p.name.to_bytes() == name)
                            .ok_or(ENOENT)?;
                        p.tiles |= tiles;
                    }
                }
            }
            ProviderCommand::Revoke { who } => {
                *provider(&mut ledger, who)? = Provider::NONE;
                let tiles = self.tiles_of(who);
                let everyone = self.everyone() & !tiles;
                self.set_everyone(everyone);
                for p in ledger.projects.iter_mut() {
                    p.tiles &= !tiles;
                }
                // A started environment holds no tile it could not use.
                self.keep_enrolled_reservations(&mut ledger, everyone);
            }
        }
        drop(ledger);
        self.released.notify_all();
        Ok(())
    }

    /// Shows one line per tile: `T everyone`, `T projects NAME,...` (at
    /// most [`NAMES_SHOWN`] names, then `,+N`) or `T out`, then ` code`
    /// and the new code (once, as 32 hex digits), or ` code` alone while a
    /// code is valid; then one line per node that has a code, `node N
    /// code` and the new code once, or alone. A new code counts as shown
    /// only once its line is written.
    pub(super) fn show_providers(&self, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let mut ledger = self.ledger.lock();
        let tiles = (self.tiles as usize).min(MAX_TILES);
        let nodes = (self.topology.nodes as usize).min(MAX_TILES);
        let everyone = self.everyone();
        let mut shown = [false; MAX_TILES];
        let mut nodes_shown = [false; MAX_TILES];
        let written = show(page, |w| {
            for (t, p) in ledger.providers.iter().enumerate().take(tiles) {
                write!(w, "{t} ")?;
                write_serving(w, &ledger, t, everyone >> t & 1 == 1)?;
                write_code(w, p)?;
                writeln!(w)?;
                if let Some(s) = shown.get_mut(t) {
                    *s = true;
                }
            }
            for (n, p) in ledger.node_providers.iter().enumerate().take(nodes) {
                if p.code.is_none() {
                    continue;
                }
                write!(w, "node {n}")?;
                write_code(w, p)?;
                writeln!(w)?;
                if let Some(s) = nodes_shown.get_mut(n) {
                    *s = true;
                }
            }
            Ok(())
        })?;
        let Ledger {
            providers,
            node_providers,
            ..
        } = &mut *ledger;
        let all = providers.iter_mut().zip(shown);
        let all = Iterator::chain(all, node_providers.iter_mut().zip(nodes_shown));
        for (p, _) in all.filter(|(_, s)| *s) {
            if let Some(mut code) = p.unshown.take() {
                forget(&mut code);
            }
        }
        Ok(written)
    }
}

/// Most project names a line of `providers` shows.
const NAMES_SHOWN: usize = 8;

/// Writes whom tile `t` serves: `everyone`, `projects` and their names, or
/// `out`.
fn write_serving(w: &mut impl Write, ledger: &Ledger, t: usize, everyone: bool) -> fmt::Result {
    if everyone {
        return w.write_str("everyone");
    }
    let serving = || ledger.projects.iter().filter(|e| e.tiles >> t & 1 == 1);
    let count = serving().count();
    if count == 0 {
        return w.write_str("out");
    }
    w.write_str("projects")?;
    for (i, e) in serving().take(NAMES_SHOWN).enumerate() {
        let sep = if i == 0 { " " } else { "," };
        write!(w, "{sep}{}", name(e))?;
    }
    match count.checked_sub(NAMES_SHOWN) {
        Some(more) if more > 0 => write!(w, ",+{more}"),
        _ => Ok(()),
    }
}

/// A project's name as text (names are ASCII: `valid_name`).
fn name(e: &ProjectEntry) -> &str {
    core::str::from_utf8(e.name.to_bytes()).unwrap_or("?")
}

/// Writes ` code` and a provider's new code (once, as 32 hex digits), or
/// ` code` alone while a code is valid, or nothing.
fn write_code(w: &mut impl Write, p: &Provider) -> fmt::Result {
    match p.unshown.as_ref() {
        Some(code) => {
            w.write_str(" code ")?;
            code.iter().try_for_each(|b| write!(w, "{b:02x}"))
        }
        None if p.code.is_some() => w.write_str(" code"),
        None => Ok(()),
    }
}

/// Provider `who`, `EINVAL` past the device's (the command's parser
/// checked already).
fn provider(ledger: &mut Ledger, who: ProviderId) -> Result<&mut Provider> {
    let (list, i) = match who {
        ProviderId::Node(n) => (&mut ledger.node_providers, n),
        ProviderId::Tile(t) => (&mut ledger.providers, t),
    };
    list.get_mut(i as usize).ok_or(EINVAL)
}
