// SPDX-License-Identifier: GPL-2.0

//! Access codes: while a provider's GPUs have a code, a file must
//! present it (`DRM_IOCTL_VGSCHED_AUTHORIZE`) before its jobs may run on
//! them.
//!
//! A *provider* is the whole device (provider 0) or one tile (provider
//! `1 + tile`). (Not the enrolment codes of `projects/providers.rs`, which
//! are the pooling document's authorization codes: an access code decides
//! who may use tiles, an enrolment code which tiles are in the pool.) The administrator generates a
//! code in configfs (`echo generate > /sys/kernel/config/vgsched/device_code`,
//! `echo "generate 3" > .../tile_codes`), reads it once from the same
//! attribute, and revokes it with `revoke`; `open` removes the
//! requirement (the state at load). A code is 128 bits from the kernel's
//! random number generator; only its SHA-256 is kept, and a presented
//! code is hashed and compared in constant time. Each new code or
//! revocation starts a new *generation* of that provider: a file is
//! authorized for the generation whose code it presented, so a revoked or
//! replaced code stops new submissions at once while queued jobs run on.
//!
//! The tiles a file's jobs may use ([`Authority::tiles_allowed`]): a tile
//! with a code of its own needs that code or the device's valid code; any
//! other tile needs the device's code if the device requires one. Failed
//! attempts are limited per user (the opener's uid) by the core crate's
//! [`AttemptLimits`]: opening another file does not start over.

use kernel::{
    bindings,
    new_mutex,
    prelude::*,
    sync::Mutex, //
};

use crate::{
    uapi,
    vgsched_core::{
        projects::{
            AttemptLimits,
            AUTH_BURST, //
        },
        tiles::MAX_TILES,
    }, //
};

/// Providers: the whole device, then each tile.
const PROVIDERS: usize = 1 + MAX_TILES;

/// Bytes of a code.
pub(crate) const CODE_BYTES: usize = uapi::DRM_VGSCHED_CODE_BYTES as usize;
/// Bytes of its hash.
pub(crate) const HASH_BYTES: usize = 32;

const _: () = assert!(uapi::DRM_VGSCHED_AUTH_BURST == AUTH_BURST);
const _: () = assert!(CODE_BYTES == crate::vgsched_core::projects::CODE_BYTES);

extern "C" {
    /// `lib/crypto/sha256.c`.
    fn sha256(data: *const u8, len: usize, out: *mut u8);
}

/// Whether two hashes differ, in a time that does not depend on where
/// (`crypto_memneq()` is not built into this kernel: `CRYPTO_LIB_UTILS`
/// is off).
fn differ(a: &[u8; HASH_BYTES], b: &[u8; HASH_BYTES]) -> bool {
    let d = a.iter().zip(b.iter()).fold(0u8, |d, (x, y)| d | (x ^ y));
    core::hint::black_box(d) != 0
}

/// The SHA-256 of `code`.
fn hash(code: &[u8; CODE_BYTES]) -> [u8; HASH_BYTES] {
    let mut out = [0u8; HASH_BYTES];
    // SAFETY: `code` is `CODE_BYTES` readable bytes and `out` has room for
    // the 32-byte digest.
    unsafe { sha256(code.as_ptr(), CODE_BYTES, out.as_mut_ptr()) };
    out
}

/// A new code from the kernel's random number generator, and its hash.
/// The caller keeps the code only until it is shown.
pub(crate) fn new_code() -> ([u8; CODE_BYTES], [u8; HASH_BYTES]) {
    let mut code = [0u8; CODE_BYTES];
    // SAFETY: `code` is `CODE_BYTES` writable bytes.
    unsafe { bindings::get_random_bytes(code.as_mut_ptr().cast(), CODE_BYTES) };
    let hashed = hash(&code);
    (code, hashed)
}

/// Whether `code` is the code whose hash is `valid`, compared in a time
/// that does not depend on where they differ.
pub(crate) fn is_code_of(code: &[u8; CODE_BYTES], valid: &[u8; HASH_BYTES]) -> bool {
    !differ(&hash(code), valid)
}

/// Overwrites a copy of a code that is no longer needed.
pub(crate) fn forget(code: &mut [u8; CODE_BYTES]) {
    code.iter_mut().for_each(|b| *b = 0);
    core::hint::black_box(&code);
}

/// One provider's code.
struct Code {
    /// Files must present a code to use the provider's GPUs.
    required: bool,
    /// The hash of the valid code, if there is one.
    hash: Option<[u8; HASH_BYTES]>,
    /// Bumped by every new code and every revocation (0: never had one).
    generation: u64,
    /// A new code not yet shown to the administrator.
    unshown: Option<[u8; CODE_BYTES]>,
}

impl Code {
    /// No code: the state at load.
    const OPEN: Code = Code {
        required: false,
        hash: None,
        generation: 0,
        unshown: None,
    };

    /// A file authorized for `generation` presented this code, and it is
    /// valid.
    fn presented(&self, generation: u64) -> bool {
        self.hash.is_some() && generation == self.generation
    }
}

/// What one open file presented: the generation of each provider's code
/// it was authorized for (0: none).
pub(crate) struct Grants {
    generations: [u64; PROVIDERS],
}

impl Grants {
    /// Nothing presented yet.
    pub(crate) fn new() -> Self {
        Self {
            generations: [0; PROVIDERS],
        }
    }
}

/// What a provider's code looks like in configfs.
pub(crate) enum Shown {
    /// A new code, shown this once.
    New([u8; CODE_BYTES]),
    /// No code required.
    Open,
    /// A valid code is required.
    Required,
    /// The code was revoked: no file may use the provider but root's.
    Revoked,
}

/// The access codes of the device and its tiles.
///
/// # Invariants
///
/// `tiles <= MAX_TILES`: providers `0..=tiles` exist.
#[pin_data]
pub(crate) struct Authority {
    tiles: u32,
    #[pin]
    codes: Mutex<[Code; PROVIDERS]>,
    /// Failed attempts, per user.
    #[pin]
    limits: Mutex<AttemptLimits>,
}

impl Authority {
    /// No codes, on a device of `tiles` tiles: every file may use them all.
    pub(crate) fn new(tiles: u32) -> impl PinInit<Self> {
        pin_init!(Self {
            tiles: tiles.min(MAX_TILES as u32),
            codes <- new_mutex!([Code::OPEN; PROVIDERS]),
            limits <- new_mutex!(AttemptLimits::new()),
        })
    }

    /// The device's tiles.
    pub(crate) fn tiles(&self) -> u32 {
        self.tiles
    }

    /// The index of `provider`, `EINVAL` past the device's tiles.
    fn index(&self, provider: u32) -> Result<usize> {
        match provider <= self.tiles {
            true => Ok(provider as usize),
            false => Err(EINVAL),
        }
    }

    /// Runs `f` on `provider`'s code, under the lock.
    fn with<R>(&self, provider: u32, f: impl FnOnce(&mut Code) -> R) -> Result<R> {
        let i = self.index(provider)?;
        let mut codes = self.codes.lock();
        codes.get_mut(i).map(f).ok_or(EINVAL)
    }

    /// Makes a new code for `provider`, replacing any; it is shown once by
    /// [`Self::show`].
    pub(crate) fn generate(&self, provider: u32) -> Result {
        let (mut code, hashed) = new_code();
        let done = self.with(provider, |c| {
            c.required = true;
            c.hash = Some(hashed);
            c.generation = c.generation.wrapping_add(1);
            c.unshown = Some(code);
        });
        // The stack copy goes; the one to show stays until it is shown.
        forget(&mut code);
        done
    }

    /// Revokes `provider`'s code: files authorized by it may submit to its
    /// GPUs no more, and no code is valid until the next one.
    pub(crate) fn revoke(&self, provider: u32) -> Result {
        self.with(provider, |c| {
            c.hash = None;
            c.unshown = None;
            c.generation = c.generation.wrapping_add(1);
        })
    }

    /// No code required for `provider` any more (and none valid).
    pub(crate) fn open(&self, provider: u32) -> Result {
        self.with(provider, |c| {
            c.required = false;
            c.hash = None;
            c.unshown = None;
            c.generation = c.generation.wrapping_add(1);
        })
    }

    /// `provider`'s code as configfs shows it; a new code only once.
    pub(crate) fn show(&self, provider: u32) -> Result<Shown> {
        self.with(provider, |c| match (c.unshown.take(), c.required, c.hash) {
            (Some(code), _, _) => Shown::New(code),
            (None, false, _) => Shown::Open,
            (None, true, Some(_)) => Shown::Required,
            (None, true, None) => Shown::Revoked,
        })
    }

    /// Authorizes `grants`, a file of `uid`'s, for `provider` if `code` is
    /// its valid code at `now_ns`: `EINVAL` for an unknown provider,
    /// `EAGAIN` while the user's failed attempts are limited (the code is
    /// not looked at), `EACCES` for a wrong code, or none valid (a failed
    /// attempt).
    pub(crate) fn authorize(
        &self,
        grants: &mut Grants,
        uid: u32,
        provider: u32,
        code: &[u8; CODE_BYTES],
        now_ns: u64,
    ) -> Result {
        let i = self.index(provider)?;
        let mut limits = self.limits.lock();
        if !limits.may_try(uid, now_ns) {
            return Err(EAGAIN);
        }
        let checked = self.check(grants, i, code);
        if checked.is_err() {
            limits.failed(uid, now_ns);
        }
        checked
    }

    /// Authorizes `grants` for provider `i` if `code` is its valid code.
    fn check(&self, grants: &mut Grants, i: usize, code: &[u8; CODE_BYTES]) -> Result {
        let codes = self.codes.lock();
        let c = codes.get(i).ok_or(EINVAL)?;
        let Some(valid) = c.hash.as_ref() else {
            return Err(EACCES);
        };
        if !is_code_of(code, valid) {
            return Err(EACCES);
        }
        if let Some(g) = grants.generations.get_mut(i) {
            *g = c.generation;
        }
        Ok(())
    }

    /// The tiles a file that presented `grants` may run jobs on, as a
    /// mask: a tile with a code of its own needs that code or the device's
    /// valid code; another needs the device's code if one is required.
    pub(crate) fn tiles_allowed(&self, grants: &Grants) -> u32 {
        let codes = self.codes.lock();
        let device = &codes[0];
        let device_valid = device.presented(grants.generations[0]);
        let device_ok = !device.required || device_valid;
        let tiles = codes.iter().zip(grants.generations.iter()).skip(1);
        let mut mask = 0u32;
        for (t, (c, &g)) in tiles.take(self.tiles as usize).enumerate() {
            let ok = match c.required {
                true => device_valid || c.presented(g),
                false => device_ok,
            };
            mask |= u32::from(ok) << t;
        }
        mask
    }
}
