// SPDX-License-Identifier: GPL-2.0

//! Shared storage: buffer objects published under names in a project's
//! folders, or in the device's public folders.
//!
//! A project's storage has project folders (read-write for its members),
//! one folder per member (read-write for that member, read-only for the
//! others) and public folders (read-only for everyone; the project's
//! owners publish there). The device's own public folders sit beside the
//! projects (a path with no project): read-only for everyone; root and
//! the owners the administrator lets (`publish_public`) publish there.
//! Folders exist while they hold names. A name keeps its object alive and
//! its size charged to the member that published it (`shared_bytes`)
//! until it is unpublished or its project goes (the device's names, until
//! unpublished or the module is unloaded). The rules are the core's
//! [`access_by_rule`]: the folder's matrix, or the administrator's rule
//! for the caller on the object (`rules` in configfs, kept on the object:
//! `gem.rs`), which the object's other paths (mapping, binding, export)
//! follow too; the handles an open makes carry the access it granted.

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
    Ledger,
    ProjectEntry, //
};
use crate::{
    file::DrmFile,
    gem::{
        self,
        Bo,
        VgObject, //
    },
    uapi,
    vgsched_core::projects::{
        access_by_rule,
        parse_name,
        AccessError,
        Caller,
        Folder,
        Op,
        Resource,
        Rights,
        Role,
        RuleCommand,
        RulePath,
        NAME_BYTES, //
    },
};

/// Most names one project's storage holds, and the device's public
/// folders.
const MAX_NAMES: usize = 256;
/// Most names one publisher other than root holds in the device's public
/// folders.
const MAX_PUBLIC_PER_PUBLISHER: usize = 64;

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

/// Whose storage a path is in.
#[derive(Clone, Copy)]
enum Store {
    /// The project of this name's.
    Project([u8; NAME_BYTES]),
    /// The device's public folders, beside the projects.
    Device,
}

/// The storage and the place a uAPI path names; `EINVAL` for a malformed
/// one. A path with no project names the device's public folders.
fn parse_path(path: &uapi::drm_vgsched_shared_path) -> Result<(Store, Place)> {
    // `char` is unsigned in the kernel: the fields are bytes.
    let project = path.project;
    let store = match project.iter().all(|&b| b == 0) {
        true if path.kind == uapi::DRM_VGSCHED_FOLDER_PUBLIC => Store::Device,
        true => return Err(EINVAL),
        false => {
            parse_name(&project).ok_or(EINVAL)?;
            Store::Project(project)
        }
    };
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
    Ok((store, place))
}

/// The place a `rules` path names.
fn rule_place(path: &RulePath<'_>) -> Place {
    let field = |name: &[u8]| {
        let mut f = [0u8; NAME_BYTES];
        if let Some(to) = f.get_mut(..name.len()) {
            to.copy_from_slice(name);
        }
        f
    };
    Place {
        kind: path.kind,
        member_uid: path.member_uid,
        folder: path.folder.map_or([0; NAME_BYTES], field),
        name: field(path.name),
    }
}

/// One storage's names, and a caller as its rules see it.
struct Storage<'a> {
    names: &'a mut KVec<SharedName>,
    caller: Caller,
    /// The place is a member folder of a uid that is not a member.
    no_such_member: bool,
}

impl Storage<'_> {
    /// Whether the caller may do `op` at `place`, whose object has the
    /// caller's rule `rule`: `ENOENT` where it may not know what the
    /// folder holds, `EACCES` where it may look but not do this.
    fn check(&self, op: Op, place: &Place, rule: Option<Rights>) -> Result {
        access_by_rule(self.caller, place.kind, op, rule).map_err(|e| match e {
            AccessError::Hidden => ENOENT,
            AccessError::Denied => EACCES,
        })
    }

    /// The index of the name at `place`.
    fn find(&self, place: &Place) -> Option<usize> {
        self.names.iter().position(|n| n.place == *place)
    }
}

impl Ledger {
    /// Whether `uid` may publish in the device's public folders besides
    /// root: an owner the administrator let (`publish_public`).
    fn publishes_public(&self, uid: u32) -> bool {
        self.projects.iter().any(|p| {
            p.members
                .iter()
                .any(|m| m.uid == uid && m.role == Role::Owner && m.publish_public)
        })
    }
}

impl Book {
    /// Empties the device's public folders (at unload): their objects go,
    /// their charges are given back.
    pub(crate) fn clear_public(&self) {
        let names = core::mem::take(&mut self.ledger.lock().public);
        // Charges given back and objects freed after the lock.
        drop(names);
    }

    /// Runs `f` on the storage `store` names, with `uid` at `place` as its
    /// rules see it, under the ledger lock; `ENOENT` for an unknown
    /// project.
    fn with_store<R>(
        &self,
        store: &Store,
        uid: u32,
        place: &Place,
        f: impl FnOnce(Storage<'_>) -> Result<R>,
    ) -> Result<R> {
        let mut ledger = self.ledger.lock();
        let admin = uid == 0;
        match store {
            Store::Device => {
                // As a non-member of a project's public folder, or, for
                // those let publish, as its owner.
                let publisher = ledger.publishes_public(uid);
                f(Storage {
                    names: &mut ledger.public,
                    caller: Caller {
                        admin,
                        role: publisher.then_some(Role::Owner),
                        owns_folder: false,
                    },
                    no_such_member: false,
                })
            }
            Store::Project(name) => {
                let name = parse_name(name).ok_or(EINVAL)?;
                let p = ledger
                    .projects
                    .iter_mut()
                    .find(|p| p.name.to_bytes() == name)
                    .ok_or(ENOENT)?;
                let caller = Caller {
                    admin,
                    role: p.role_of(uid),
                    owns_folder: place.kind == Folder::Member && place.member_uid == uid,
                };
                let no_such_member =
                    place.kind == Folder::Member && p.role_of(place.member_uid).is_none();
                f(Storage {
                    names: &mut p.names,
                    caller,
                    no_such_member,
                })
            }
        }
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
    let (store, place) = parse_path(path)?;
    let object = gem::lookup(file, handle)?;
    let uid = file.inner().uid;
    // Checked before the charge, to fail early, and again in the hold that
    // stores the name: a folder's rules, its member or the name may change
    // while the ledger is unlocked for the charge.
    let may_publish = |st: &Storage<'_>| {
        // No member, no folder to publish to: for every caller, before the
        // folder's rules (which would refuse a folder not one's own).
        if st.no_such_member {
            return Err(ENOENT);
        }
        st.check(Op::Publish, &place, None)?;
        match st.find(&place) {
            Some(_) => Err(EEXIST),
            None => Ok(()),
        }
    };
    book.with_store(&store, uid, &place, |st| may_publish(&st))?;
    // Publishing what one may only read would let anyone open it
    // read-write from one's own folder; so would publishing what only an
    // administrator's rule, for this user and object, lets one write.
    if !object.may_republish(file) {
        return Err(EACCES);
    }
    let size = u64::try_from(object.size()).map_err(|_| EINVAL)?;
    let published = object.clone();
    let charge = book.charge(file.inner().opener(), Resource::SharedBytes, size, false)?;
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
    let stored = book.with_store(&store, uid, &place, |st| {
        may_publish(&st)?;
        if st.names.len() >= MAX_NAMES {
            return Err(ENOSPC);
        }
        // The device's public folders are shared by every project's
        // publishers: none but root fills more than its part.
        let mine = st.names.iter().filter(|n| n.publisher == uid).count();
        if matches!(store, Store::Device) && uid != 0 && mine >= MAX_PUBLIC_PER_PUBLISHER {
            return Err(ENOSPC);
        }
        st.names.reserve(1, GFP_KERNEL_ACCOUNT)?;
        // The object's rule may have changed too while the ledger was
        // unlocked.
        if !name.as_ref().is_some_and(|n| n.object.may_republish(file)) {
            return Err(EACCES);
        }
        let n = name.take().ok_or(EINVAL)?;
        n.object.mark_shared();
        st.names.push_within_capacity(n).map_err(|e| {
            name = Some(e.0);
            ENOMEM
        })
    });
    drop(name);
    // A dma-buf's mappings of a shared object are read-only: those made
    // before lose their writable entries (no lock held here).
    if stored.is_ok() {
        VgObject::protect(&published);
    }
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
    let (store, place) = parse_path(path)?;
    let uid = file.inner().uid;
    let op = if write { Op::OpenWrite } else { Op::OpenRead };
    let (object, by_rule) = book.with_store(&store, uid, &place, |st| {
        let named = st.find(&place).and_then(|i| st.names.get(i));
        // The administrator's rule on the object for the caller, if any,
        // in place of the folder's matrix (what is hidden stays hidden).
        let rule = named.and_then(|n| n.object.rule_for(uid));
        st.check(op, &place, rule)?;
        // Write access only the rule gave ends with the rule.
        let by_rule = write && st.check(op, &place, None).is_err();
        // Cloned once allowed: a reference dropped here would be dropped
        // under the ledger lock.
        let object = named.map(|n| n.object.clone()).ok_or(ENOENT)?;
        Ok((object, by_rule))
    })?;
    object.grant(file, write, by_rule)?;
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
    let (store, place) = parse_path(path)?;
    let uid = file.inner().uid;
    let name = book.with_store(&store, uid, &place, |st| {
        st.check(Op::Unpublish, &place, None)?;
        let i = st.find(&place).ok_or(ENOENT)?;
        // In the device's public folders a publisher removes its own
        // names only: they are no project's to manage.
        let theirs = st.names.get(i).is_some_and(|n| n.publisher != uid);
        if matches!(store, Store::Device) && uid != 0 && theirs {
            return Err(EACCES);
        }
        st.names.remove(i).map_err(|_| ENOENT)
    })?;
    // Its charge is given back, and its object perhaps freed, after the
    // ledger lock.
    drop(name);
    Ok(())
}

/// A name field as text.
fn text(field: &[u8; NAME_BYTES]) -> &str {
    let name = parse_name(field).unwrap_or(b"?");
    core::str::from_utf8(name).unwrap_or("?")
}

/// Writes `place` as `KIND/FOLDER/NAME` (the member's uid as the folder of
/// a member folder).
fn write_place(w: &mut impl Write, place: &Place) -> fmt::Result {
    match place.kind {
        Folder::Project => write!(w, "project/{}", text(&place.folder))?,
        Folder::Public => write!(w, "public/{}", text(&place.folder))?,
        Folder::Member => write!(w, "member/{}", place.member_uid)?,
    }
    write!(w, "/{}", text(&place.name))
}

/// Shows `names` in `page`, one line each (`KIND/FOLDER/NAME SIZE
/// PUBLISHER`); when the page is full, a last line `+N more` counts the
/// rest.
pub(super) fn list(names: &[SharedName], page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
    /// Room kept for the `+N more` line.
    const TAIL: usize = 32;
    let (body, _) = page.split_at_mut(PAGE_SIZE - TAIL);
    let mut w = Formatter::new(body);
    let mut end = 0;
    let mut shown = 0;
    for n in names {
        let line = write_place(&mut w, &n.place)
            .and_then(|()| writeln!(w, " {} {}", n.object.size(), n.publisher));
        if line.is_err() {
            break;
        }
        end = w.bytes_written();
        shown += 1;
    }
    let more = names.len().saturating_sub(shown);
    if more > 0 {
        let rest = page.get_mut(end..).ok_or(EINVAL)?;
        let mut t = Formatter::new(rest);
        writeln!(t, "+{more} more").map_err(|_| EINVAL)?;
        end += t.bytes_written();
    }
    Ok(end)
}

/// The administrator's rules for `uid` on the objects of `p` go (it is no
/// longer a member of it).
pub(super) fn forget_rules(p: &ProjectEntry, uid: u32) {
    for n in p.names.iter() {
        // Only removing: no allocation, cannot fail.
        let _ = n.object.set_rule(uid, None);
        // The right ends for the mappings made before too: their next
        // write faults and is checked again. (Under the ledger lock, which
        // no mapping operation takes while it holds a lock this takes.)
        VgObject::protect(&n.object);
    }
}

/// Carries out a command written to `rules`: `PATH UID RIGHTS` gives user
/// `UID` the rights on the object published at `PATH`, `PATH UID default`
/// removes its rule. `EINVAL` for a malformed command or root's uid,
/// `ENOENT` for an unknown project or name, or a `UID` that is not a
/// member of the path's project, `ENOSPC` past the rules an object holds.
pub(super) fn set_rule(book: &Book, line: &[u8]) -> Result {
    let cmd = RuleCommand::parse(line).ok_or(EINVAL)?;
    // Root may do everything: no rule binds it.
    if cmd.uid == 0 {
        return Err(EINVAL);
    }
    let place = rule_place(&cmd.path);
    let object = {
        let ledger = book.ledger.lock();
        let names = match cmd.path.project {
            None => &ledger.public,
            Some(name) => {
                let p = ledger
                    .projects
                    .iter()
                    .find(|p| p.name.to_bytes() == name)
                    .ok_or(ENOENT)?;
                // A rule is for a member: others do not see the object.
                p.role_of(cmd.uid).ok_or(ENOENT)?;
                &p.names
            }
        };
        let n = names.iter().find(|n| n.place == place).ok_or(ENOENT)?;
        n.object.clone()
    };
    object.set_rule(cmd.uid, cmd.rights)?;
    // A right taken back ends for the mappings made before too: their next
    // write faults and is checked again (no lock held here).
    VgObject::protect(&object);
    Ok(())
}

/// Shows every rule, one line each: `PATH UID RIGHTS`, the rights as
/// three letters (`r-d`); when the page is full, a last line `+more`.
pub(super) fn show_rules(book: &Book, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
    /// Room kept for the `+more` line.
    const TAIL: usize = 16;
    let ledger = book.ledger.lock();
    let (body, _) = page.split_at_mut(PAGE_SIZE - TAIL);
    let mut w = Formatter::new(body);
    let mut end = 0;
    let mut full = false;
    let projects = ledger.projects.iter().map(|p| (Some(&p.name), &p.names));
    let stores = Iterator::chain(projects, core::iter::once((None, &ledger.public)));
    for (project, names) in stores {
        for n in names.iter() {
            n.object.each_rule(|r| {
                if full {
                    return;
                }
                let letters = r.rights.letters();
                let rights = core::str::from_utf8(&letters).unwrap_or("?");
                let line = match project {
                    Some(p) => write!(w, "{}/", core::str::from_utf8(p.to_bytes()).unwrap_or("?")),
                    None => Ok(()),
                }
                .and_then(|()| write_place(&mut w, &n.place))
                .and_then(|()| writeln!(w, " {} {}", r.uid, rights));
                match line {
                    Ok(()) => end = w.bytes_written(),
                    Err(_) => full = true,
                }
            });
        }
    }
    if full {
        let rest = page.get_mut(end..).ok_or(EINVAL)?;
        let mut t = Formatter::new(rest);
        writeln!(t, "+more").map_err(|_| EINVAL)?;
        end += t.bytes_written();
    }
    Ok(end)
}
