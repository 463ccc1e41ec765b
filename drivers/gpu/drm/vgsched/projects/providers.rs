// SPDX-License-Identifier: GPL-2.0

//! Provider enrolment: which of the device's tiles are in the pool, and
//! for whom.
//!
//! A tile is a *provider*: its GPUs serve jobs only once they are in the
//! pool. The provider's side makes an enrolment code for it (`code T` in
//! the subsystem's `providers` attribute, shown once); the pool's
//! administrator enters it (`enrol T CODE`, for every user, or `enrol T
//! CODE PROJECT`, for that project's members, once per project) and the
//! tile joins the pool; `revoke T` takes it out again: no job submitted
//! afterwards may use it, the jobs accepted before run on, and its code
//! is void. The module parameter `tile_enrolment` says where tiles start:
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
        CODE_BYTES, //
    },
    tiles::{
        low_bits,
        MAX_TILES, //
    },
};

/// One provider, a tile: its enrolment code. Whom it serves is kept
/// elsewhere, once: every user in `Book::everyone_tiles`, the projects it
/// was entered for in their own mask (`ProjectEntry::tiles`).
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

/// The providers of a device of up to [`MAX_TILES`] tiles.
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
    fn everyone(&self) -> u32 {
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

    /// Carries out a command written to `providers`: `EINVAL` for a
    /// malformed one, `EACCES` for a code that is not the tile's valid
    /// one (or none is), `ENOENT` for an unknown project.
    pub(super) fn provider_command(&self, line: &[u8]) -> Result {
        let command = ProviderCommand::parse(line, self.tiles).ok_or(EINVAL)?;
        let mut ledger = self.ledger.lock();
        match command {
            ProviderCommand::Code { tile } => {
                let p = provider(&mut ledger, tile)?;
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
                tile,
                mut code,
                project,
            } => {
                let valid = provider(&mut ledger, tile)?
                    .code
                    .is_some_and(|h| is_code_of(&code, &h));
                forget(&mut code);
                if !valid {
                    return Err(EACCES);
                }
                match project {
                    None => self.set_everyone(self.everyone() | 1 << tile),
                    Some(name) => {
                        let p = ledger
                            .projects
                            .iter_mut()
                            .find(|p| p.name.to_bytes() == name)
                            .ok_or(ENOENT)?;
                        p.tiles |= 1 << tile;
                    }
                }
            }
            ProviderCommand::Revoke { tile } => {
                *provider(&mut ledger, tile)? = Provider::NONE;
                self.set_everyone(self.everyone() & !(1 << tile));
                for p in ledger.projects.iter_mut() {
                    p.tiles &= !(1 << tile);
                }
            }
        }
        Ok(())
    }

    /// Shows one line per tile: `T everyone`, `T projects NAME,...` (at
    /// most [`NAMES_SHOWN`] names, then `,+N`) or `T out`, then ` code`
    /// and the new code (once, as 32 hex digits), or ` code` alone while a
    /// code is valid. A new code counts as shown only once its line is
    /// written.
    pub(super) fn show_providers(&self, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let mut ledger = self.ledger.lock();
        let tiles = (self.tiles as usize).min(MAX_TILES);
        let everyone = self.everyone();
        let mut shown = [false; MAX_TILES];
        let written = show(page, |w| {
            for (t, p) in ledger.providers.iter().enumerate().take(tiles) {
                write!(w, "{t} ")?;
                write_serving(w, &ledger, t, everyone >> t & 1 == 1)?;
                match p.unshown.as_ref() {
                    Some(code) => {
                        w.write_str(" code ")?;
                        code.iter().try_for_each(|b| write!(w, "{b:02x}"))?;
                    }
                    None if p.code.is_some() => w.write_str(" code")?,
                    None => {}
                }
                writeln!(w)?;
                if let Some(s) = shown.get_mut(t) {
                    *s = true;
                }
            }
            Ok(())
        })?;
        for (p, _) in ledger.providers.iter_mut().zip(shown).filter(|(_, s)| *s) {
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

/// Tile `tile`'s provider, `EINVAL` past the device's.
fn provider(ledger: &mut Ledger, tile: u32) -> Result<&mut Provider> {
    ledger.providers.get_mut(tile as usize).ok_or(EINVAL)
}
