// SPDX-License-Identifier: GPL-2.0

//! The device's authorization code (its *GPU code*): while one exists, a
//! file must present it (`DRM_IOCTL_VGSCHED_AUTHORIZE`) before its jobs
//! are accepted.
//!
//! The administrator generates the code in configfs (`echo generate >
//! /sys/kernel/config/vgsched/device_code`), reads it once from the same
//! attribute, and revokes it with `echo revoke`: the device then takes no
//! job from anyone but root until a new code is generated, or `echo open`
//! lets every file submit again (the state at load). The code is 128 bits from
//! the kernel's random number generator; only its SHA-256 is kept, and a
//! presented code is hashed and compared in constant time. Each new code
//! or revocation starts a new *generation*: a file is authorized for the
//! generation whose code it presented, so a revoked or replaced code stops
//! new submissions at once while queued jobs run on. Failed attempts are
//! limited per file by the core crate's
//! [`AttemptLimiter`](crate::vgsched_core::projects::AttemptLimiter).

use kernel::{
    bindings,
    new_mutex,
    prelude::*,
    sync::Mutex, //
};

use crate::{
    uapi,
    vgsched_core::projects::AUTH_BURST, //
};

/// Bytes of a code.
pub(crate) const CODE_BYTES: usize = uapi::DRM_VGSCHED_CODE_BYTES as usize;
/// Bytes of its hash.
const HASH_BYTES: usize = 32;

const _: () = assert!(uapi::DRM_VGSCHED_AUTH_BURST == AUTH_BURST);

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

/// The code's state.
struct Code {
    /// Files must present a code to submit.
    required: bool,
    /// The hash of the valid code, if there is one.
    hash: Option<[u8; HASH_BYTES]>,
    /// Bumped by every new code and every revocation (0: never had one).
    generation: u64,
    /// A new code not yet shown to the administrator.
    unshown: Option<[u8; CODE_BYTES]>,
}

/// The device's authorization code.
#[pin_data]
pub(crate) struct Authority {
    #[pin]
    code: Mutex<Code>,
}

impl Authority {
    /// No code: every file may submit.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            code <- new_mutex!(Code {
                required: false,
                hash: None,
                generation: 0,
                unshown: None,
            }),
        })
    }

    /// Makes a new code, replacing any; it is shown once by [`Self::show`].
    pub(crate) fn generate(&self) {
        let mut code = [0u8; CODE_BYTES];
        // SAFETY: `code` is `CODE_BYTES` writable bytes.
        unsafe { bindings::get_random_bytes(code.as_mut_ptr().cast(), CODE_BYTES) };
        let mut c = self.code.lock();
        c.required = true;
        c.hash = Some(hash(&code));
        c.generation = c.generation.wrapping_add(1);
        c.unshown = Some(code);
        // The stack copy goes; the one to show stays until it is shown.
        code.iter_mut().for_each(|b| *b = 0);
        core::hint::black_box(&code);
    }

    /// Revokes the code: files authorized by it may submit no more, and
    /// no code is valid until the next one.
    pub(crate) fn revoke(&self) {
        let mut c = self.code.lock();
        c.hash = None;
        c.unshown = None;
        c.generation = c.generation.wrapping_add(1);
    }

    /// No code required any more (and none valid).
    pub(crate) fn open(&self) {
        let mut c = self.code.lock();
        c.required = false;
        c.hash = None;
        c.unshown = None;
        c.generation = c.generation.wrapping_add(1);
    }

    /// The new code once (`Some`), then `None`; whether a code is
    /// required, and whether one is valid.
    pub(crate) fn show(&self) -> (Option<[u8; CODE_BYTES]>, bool, bool) {
        let mut c = self.code.lock();
        (c.unshown.take(), c.required, c.hash.is_some())
    }

    /// The generation `code` authorizes, or `EACCES` (a wrong code, or no
    /// code at all).
    pub(crate) fn check(&self, code: &[u8; CODE_BYTES]) -> Result<u64> {
        let presented = hash(code);
        let c = self.code.lock();
        let Some(valid) = c.hash.as_ref() else {
            return Err(EACCES);
        };
        match differ(&presented, valid) {
            false => Ok(c.generation),
            true => Err(EACCES),
        }
    }

    /// Whether a file authorized for `generation` (0: never) may submit.
    pub(crate) fn allows(&self, generation: u64) -> bool {
        let c = self.code.lock();
        !c.required || (c.hash.is_some() && generation == c.generation)
    }
}
