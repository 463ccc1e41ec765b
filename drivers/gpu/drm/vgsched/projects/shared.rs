// SPDX-License-Identifier: GPL-2.0

//! Shared storage: buffer objects published under names in a project's
//! folders.
//!
//! A project's storage has project folders (read-write for its members),
//! one folder per member (read-write for that member, read-only for the
//! others) and public folders (read-only for everyone; the project's
//! owners publish there). Folders exist while they hold names. A name
//! keeps its object alive and its size charged to the member that
//! published it (`shared_bytes`) until it is unpublished or the project
//! goes. The rules are the core's [`access`]; the handles an open makes
//! carry the access it granted (`gem.rs`).

use kernel::{
    drm::gem::BaseObject,
    fmt::{
        self,
        Write, //
    },
    page::PAGE_SIZE,
    prelude::*,
    str::Formatter,
    sync::{
        aref::ARef,
        Arc, //
    },
};

use super::{
    Book,
    Charge,
    ProjectEntry, //
};
use crate::{
    file::DrmFile,
    gem::{
        self,
        Bo, //
    },
    uapi,
    vgsched_core::projects::{
        access,
        parse_name,
        AccessError,
        Caller,
        Folder,
        Op,
        Resource,
        NAME_BYTES, //
    },
};

/// Most names one project's storage holds.
const MAX_NAMES: usize = 256;

/// A folder and a name in it.
///
/// # Invariants
///
/// `folder` and `name` are valid names of [`parse_name`] (`folder` all zero
/// for a member folder); `member_uid` is 0 except for a member folder.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Place {
    kind: Folder,
    member_uid: u32,
    folder: [u8; NAME_BYTES],
    name: [u8; NAME_BYTES],
}

/// A name in a project's storage.
pub(super) struct SharedName {
    place: Place,
    object: ARef<Bo>,
    publisher: u32,
    /// Its size, charged to the publishing member (none for root).
    _charge: Option<Charge>,
}

/// The project and the place a uAPI path names; `EINVAL` for a malformed
/// one.
fn parse_path(path: &uapi::drm_vgsched_shared_path) -> Result<([u8; NAME_BYTES], Place)> {
    // `char` is unsigned in the kernel: the fields are bytes.
    let project = path.project;
    parse_name(&project).ok_or(EINVAL)?;
    let name = path.name;
    parse_name(&name).ok_or(EINVAL)?;
    let folder = path.folder;
    let kind = match path.kind {
        uapi::DRM_VGSCHED_FOLDER_PROJECT => Folder::Project,
        uapi::DRM_VGSCHED_FOLDER_MEMBER => Folder::Member,
        uapi::DRM_VGSCHED_FOLDER_PUBLIC => Folder::Public,
        _ => return Err(EINVAL),
    };
    let well_formed = match kind {
        Folder::Member => folder.iter().all(|&b| b == 0),
        Folder::Project | Folder::Public => parse_name(&folder).is_some() && path.member_uid == 0,
    };
    if !well_formed {
        return Err(EINVAL);
    }
    let place = Place {
        kind,
        member_uid: path.member_uid,
        folder,
        name,
    };
    Ok((project, place))
}

impl ProjectEntry {
    /// Whether `uid` may do `op` at `place` of this project: `ENOENT` where
    /// it may not know what the folder holds, `EACCES` where it may look
    /// but not do this.
    fn check(&self, uid: u32, place: &Place, op: Op) -> Result {
        let role = self.role_of(uid);
        let caller = Caller {
            admin: uid == 0,
            role,
            owns_folder: place.kind == Folder::Member && place.member_uid == uid,
        };
        access(caller, place.kind, op).map_err(|e| match e {
            AccessError::Hidden => ENOENT,
            AccessError::Denied => EACCES,
        })
    }

    /// The index of the name at `place`.
    fn find(&self, place: &Place) -> Option<usize> {
        self.names.iter().position(|n| n.place == *place)
    }
}

impl Book {
    /// Runs `f` on the project named `name`, under the ledger lock;
    /// `ENOENT` if there is none.
    fn with_named<R>(
        &self,
        name: &[u8; NAME_BYTES],
        f: impl FnOnce(&mut ProjectEntry) -> Result<R>,
    ) -> Result<R> {
        let name = parse_name(name).ok_or(EINVAL)?;
        let mut ledger = self.ledger.lock();
        let p = ledger
            .projects
            .iter_mut()
            .find(|p| p.name.to_bytes() == name)
            .ok_or(ENOENT)?;
        f(p)
    }
}

/// `DRM_IOCTL_VGSCHED_SHARED_PUBLISH`: names the object `handle` of `file`
/// at `path`. Besides the folder's rules (`ENOENT`, `EACCES`): `EACCES` if
/// the file may not write the object, `EEXIST` for a name in use,
/// `EDQUOT` past the member's `shared_bytes`, `ENOSPC` past the most
/// names a project holds.
pub(crate) fn publish(
    book: &Arc<Book>,
    file: &DrmFile,
    path: &uapi::drm_vgsched_shared_path,
    handle: u32,
) -> Result {
    let (project, place) = parse_path(path)?;
    let object = gem::lookup(file, handle)?;
    let uid = file.inner().uid;
    book.with_named(&project, |p| {
        // No member, no folder to publish to: for every caller, before the
        // folder's rules (which would refuse a folder not one's own).
        if place.kind == Folder::Member && p.role_of(place.member_uid).is_none() {
            return Err(ENOENT);
        }
        p.check(uid, &place, Op::Publish)?;
        match p.find(&place) {
            Some(_) => Err(EEXIST),
            None => Ok(()),
        }
    })?;
    // Publishing what one may only read would let anyone open it
    // read-write from one's own folder.
    if !object.may_write(file) {
        return Err(EACCES);
    }
    let size = u64::try_from(object.size()).map_err(|_| EINVAL)?;
    let charge = book.charge(uid, Resource::SharedBytes, size, false)?;
    let mut name = Some(SharedName {
        place,
        object,
        publisher: uid,
        _charge: charge,
    });
    // The ledger was unlocked for the charge: the project may have gone,
    // or the name been taken, meanwhile. A name not stored stays in `name`
    // and is dropped (its charge given back, perhaps its object freed,
    // both taking the ledger lock) after the lock.
    let stored = book.with_named(&project, |p| {
        if p.find(&place).is_some() {
            return Err(EEXIST);
        }
        if p.names.len() >= MAX_NAMES {
            return Err(ENOSPC);
        }
        p.names.reserve(1, GFP_KERNEL_ACCOUNT)?;
        let n = name.take().ok_or(EINVAL)?;
        n.object.mark_shared();
        p.names.push_within_capacity(n).map_err(|e| {
            name = Some(e.0);
            ENOMEM
        })
    });
    drop(name);
    stored
}

/// `DRM_IOCTL_VGSCHED_SHARED_OPEN`: a new handle of `file` to the object
/// at `path`, read-write if `write` and the folder's rules allow it.
/// Returns the handle, whether the file may now write the object, and its
/// size.
pub(crate) fn open(
    book: &Arc<Book>,
    file: &DrmFile,
    path: &uapi::drm_vgsched_shared_path,
    write: bool,
) -> Result<(u32, bool, u64)> {
    let (project, place) = parse_path(path)?;
    let uid = file.inner().uid;
    let op = if write { Op::OpenWrite } else { Op::OpenRead };
    let object = book.with_named(&project, |p| {
        p.check(uid, &place, op)?;
        let i = p.find(&place).ok_or(ENOENT)?;
        p.names.get(i).map(|n| n.object.clone()).ok_or(ENOENT)
    })?;
    object.grant(file, write)?;
    let handle = match object.create_handle(file) {
        Ok(handle) => handle,
        Err(e) => {
            object.ungrant(file);
            return Err(e);
        }
    };
    let size = u64::try_from(object.size()).map_err(|_| EINVAL)?;
    Ok((handle, object.may_write(file), size))
}

/// `DRM_IOCTL_VGSCHED_SHARED_UNPUBLISH`: removes the name at `path`
/// (`ENOENT` if there is none); open handles keep the object.
pub(crate) fn unpublish(
    book: &Arc<Book>,
    file: &DrmFile,
    path: &uapi::drm_vgsched_shared_path,
) -> Result {
    let (project, place) = parse_path(path)?;
    let uid = file.inner().uid;
    let name = book.with_named(&project, |p| {
        p.check(uid, &place, Op::Unpublish)?;
        let i = p.find(&place).ok_or(ENOENT)?;
        p.names.remove(i).map_err(|_| ENOENT)
    })?;
    // Its charge is given back, and its object perhaps freed, after the
    // ledger lock.
    drop(name);
    Ok(())
}

/// Shows the names of `p` in `page`, one line each (`KIND/FOLDER/NAME
/// SIZE PUBLISHER`, with the member's uid as the folder of a member
/// folder); when the page is full, a last line `+N more` counts the rest.
pub(super) fn list(p: &ProjectEntry, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
    /// Room kept for the `+N more` line.
    const TAIL: usize = 32;
    fn text(field: &[u8; NAME_BYTES]) -> &str {
        let name = parse_name(field).unwrap_or(b"?");
        core::str::from_utf8(name).unwrap_or("?")
    }
    fn line(w: &mut Formatter<'_>, n: &SharedName) -> fmt::Result {
        let place = &n.place;
        match place.kind {
            Folder::Project => write!(w, "project/{}", text(&place.folder))?,
            Folder::Public => write!(w, "public/{}", text(&place.folder))?,
            Folder::Member => write!(w, "member/{}", place.member_uid)?,
        }
        let size = n.object.size();
        writeln!(w, "/{} {} {}", text(&place.name), size, n.publisher)
    }
    let (body, _) = page.split_at_mut(PAGE_SIZE - TAIL);
    let mut w = Formatter::new(body);
    let mut end = 0;
    let mut shown = 0;
    for n in p.names.iter() {
        if line(&mut w, n).is_err() {
            break;
        }
        end = w.bytes_written();
        shown += 1;
    }
    let more = p.names.len().saturating_sub(shown);
    if more > 0 {
        let rest = page.get_mut(end..).ok_or(EINVAL)?;
        let mut t = Formatter::new(rest);
        writeln!(t, "+{more} more").map_err(|_| EINVAL)?;
        end += t.bytes_written();
    }
    Ok(end)
}
