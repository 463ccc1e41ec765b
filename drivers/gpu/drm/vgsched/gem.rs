// SPDX-License-Identifier: GPL-2.0

//! Buffer objects: shmem-backed GEM objects that user space can mmap.
//!
//! Each object knows how every open file holds it ([`Holding`]): the
//! file's handles to it and whether the file may write it. A file that
//! holds an object only through read-only shared-storage opens
//! (`shared.rs`) may not map it writable nor bind it writable in a job.
//!
//! Each object also knows which of its pages the CPU has written through a
//! mapping since its device copy last took them
//! ([`VgObject::take_cpu_written`]): its mappings, through the DRM file or
//! any of its dma-bufs, report the first write to each page
//! (`bo_mapping.c`), so a program that writes its inputs through `mmap()`
//! between jobs has them in the next job without any call, whatever copy is
//! resident. A write through a mapping is allowed only while the mapping's
//! holder may write the object ([`VgObject::mapping_may_write`]): a right
//! the administrator takes back ends for the mappings made before, at their
//! next write fault and at `mprotect()`.

use core::ptr::NonNull;

use kernel::{
    bindings,
    drm::{
        self,
        gem,
        gem::{
            shmem,
            BaseObject, //
        }, //
    },
    error::to_result,
    ffi::c_int,
    io::Io,
    mm::virt::{
        flags,
        VmaNew, //
    },
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{
            ordering,
            Atomic, //
        },
        Arc,
        Mutex, //
    }, //
};

use crate::{
    driver::VgDriver,
    fence::RawGemObject,
    file::DrmFile,
    job::SharedMap,
    projects::{
        Charge,
        Opener, //
    },
    uapi,
    vgsched_core::{
        isa::{
            self,
            Instr,
            Op, //
        },
        projects::{
            may_download,
            may_republish,
            may_write_now,
            Holding,
            Resource,
            Rights, //
        }, //
    },
    vram::{
        self,
        DeviceCopy,
        DeviceMemory, //
    },
};

/// How one open file, by its DRM client id, holds an object.
struct Holder {
    client: u64,
    holding: Holding,
}

/// Largest buffer object, in bytes.
pub(crate) const MAX_BO_SIZE: u64 = uapi::DRM_VGSCHED_MAX_BO_SIZE as u64;

/// Driver data of one buffer object.
#[pin_data(PinnedDrop)]
pub(crate) struct VgObject {
    /// Its number on the device, the key of its device copy.
    pub(crate) id: u64,
    /// Its bytes, charged to the project member that created it
    /// (`projects.rs`) until it is freed.
    _charge: Option<Charge>,
    /// It is a dumb buffer ([`create_dumb`]): vgsched's own ioctls refuse
    /// its handles ([`lookup`]).
    dumb: bool,
    /// The device memory that may hold a copy of it.
    memory: Arc<DeviceMemory>,
    /// Its device copy (placed while resident), made with it so that
    /// making it resident never allocates.
    pub(crate) copy: Arc<DeviceCopy>,
    /// It has been published in shared storage: from then on other files
    /// get handles to it only from shared-storage opens, and its dma-buf
    /// maps read-only. Never cleared.
    shared: Atomic<bool>,
    /// The open files that hold handles to it, and how.
    #[pin]
    holders: Mutex<KVec<Holder>>,
    /// One bit per page: the CPU wrote the page through a mapping since a
    /// device copy last took it ([`VgObject::take_cpu_written`]). Whatever
    /// sets a bit counts it in `cpu_writes` afterwards: the lock-free test
    /// of that function relies on it.
    cpu_written: KVVec<Atomic<u64>>,
    /// The dma-bufs it is mapped through (`bo_mapping.c`), so that
    /// protecting it reaches every CPU mapping, however old its dma-buf.
    maps: DmabufMaps,
    /// It was exported as a dma-buf: an importing device may write its
    /// pages without any report, so no program read from it is cached.
    /// Never cleared.
    exported: Atomic<bool>,
    /// Serialises [`VgObject::take_cpu_written`]: the page bits taken from
    /// `cpu_written`, held while the CPU's mappings are write-protected
    /// and then handed to the device copy.
    #[pin]
    cpu_taking: Mutex<KVVec<u64>>,
    /// A kernel mapping kept while a file holds a handle to it
    /// ([`VgObject::keep_mapped`]). It holds a reference to the object,
    /// so it is dropped when the last handle goes. Taken after `holders`.
    #[pin]
    kmap: Mutex<Option<SharedMap>>,
    /// Writes the CPU's mappings reported ([`vgsched_bo_cpu_write`]): the
    /// first write to each page after the mappings were write-protected.
    cpu_writes: Atomic<u64>,
    /// `cpu_writes` as the last [`VgObject::take_cpu_written`] to complete
    /// read it, under `cpu_taking` before taking the bits (stored once that
    /// take has handed its pages over): while the two are equal no write
    /// was reported since, and a submission has nothing to take.
    cpu_taken: Atomic<u64>,
    /// The program last validated from the object ([`VgObject::program`]).
    #[pin]
    program: Mutex<Option<CachedProgram>>,
    /// The administrator's rules on it, per user (`shared.rs`): what each
    /// may do with it in place of its folder's matrix. Taken alone.
    #[pin]
    rules: Mutex<KVec<UserRule>>,
}

/// The administrator's rule for one user on one shared object.
#[derive(Clone, Copy)]
pub(crate) struct UserRule {
    pub(crate) uid: u32,
    pub(crate) rights: Rights,
}

/// Most rules on one object.
const MAX_RULES: usize = 64;

/// A validated program, shared by the jobs that run it.
pub(crate) type Program = Arc<KVec<Instr>>;

/// A program validated from an object, and what it was validated for.
struct CachedProgram {
    /// Instructions read, and binding slots it was validated against.
    instrs: usize,
    bindings: usize,
    /// The object's reported CPU writes before its mappings were
    /// write-protected for this read, and its device copy's write-backs.
    cpu_writes: u64,
    write_backs: u64,
    program: Program,
}

/// Opaque `struct vm_area_struct` (the generated binding is not FFI-safe
/// by lint).
#[repr(C)]
struct RawVma {
    _opaque: [u8; 0],
}

/// Opaque `struct vgsched_bo_maps` of `bo_mapping.c`.
#[repr(C)]
struct RawMaps {
    _opaque: [u8; 0],
}

extern "C" {
    fn vgsched_bo_maps_new() -> *mut RawMaps;
    fn vgsched_bo_maps_free(maps: *mut RawMaps);
    fn vgsched_bo_track_writes(vma: *mut RawVma, obj: *mut RawGemObject) -> c_int;
    fn vgsched_bo_protect(obj: *mut RawGemObject);
}

/// The record of the dma-bufs an object is mapped through, which
/// `bo_mapping.c` keeps and serialises with a mutex of its own.
///
/// # Invariants
///
/// `ptr` was returned by `vgsched_bo_maps_new()` and is freed only when
/// this value drops.
struct DmabufMaps {
    ptr: NonNull<RawMaps>,
}

// SAFETY: The record is used from any thread; `bo_mapping.c` serialises
// its accesses with the record's mutex.
unsafe impl Send for DmabufMaps {}
// SAFETY: As above: every access goes through `bo_mapping.c` under its
// mutex.
unsafe impl Sync for DmabufMaps {}

impl DmabufMaps {
    fn new() -> Result<Self> {
        // SAFETY: No preconditions; it allocates with `GFP_KERNEL_ACCOUNT`.
        let ptr = NonNull::new(unsafe { vgsched_bo_maps_new() }).ok_or(ENOMEM)?;
        // INVARIANT: Just made by `vgsched_bo_maps_new()`.
        Ok(Self { ptr })
    }
}

impl Drop for DmabufMaps {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `ptr` is live and freed only here.
        // Its object is being freed, so no mapping of it is left.
        unsafe { vgsched_bo_maps_free(self.ptr.as_ptr()) };
    }
}

/// The object `obj` of a mapping and the DRM file `file` it was made
/// through (null: a dma-buf).
///
/// # Safety
///
/// `obj` is the GEM object of a live [`Bo`] (the mapping holds a reference
/// to it): `bo_mapping.c`'s operations are installed only on mappings of
/// this driver's objects, by [`gem::DriverObject::mmap`]. `file`, if not
/// null, is the open `struct drm_file` of the DRM file the mapping was made
/// through, which the mapping keeps open.
unsafe fn mapping_of<'a>(
    obj: *mut bindings::drm_gem_object,
    file: *mut bindings::drm_file,
) -> (&'a Bo, Option<&'a DrmFile>) {
    // SAFETY: By the function's safety requirement `obj` is embedded in a
    // live `Bo`, which the mapping keeps alive during the call.
    let bo = unsafe { <Bo as gem::IntoGEMObject>::from_raw(obj) };
    // SAFETY: By the function's safety requirement `file` is null or an
    // open DRM file of this driver (the mapping's file has its file
    // operations), kept open by the mapping.
    let file = (!file.is_null()).then(|| unsafe { DrmFile::from_raw(file) });
    (bo, file)
}

/// Called by `bo_mapping.c` when the CPU is about to write page `page` of
/// `obj` through a mapping made through `file` (null: a dma-buf) for the
/// first time since it was protected: records the page, or refuses the
/// write (`false`) when the mapping's holder may no longer write.
///
/// # Safety
///
/// As [`mapping_of`].
#[no_mangle]
unsafe extern "C" fn vgsched_bo_cpu_write(
    obj: *mut bindings::drm_gem_object,
    file: *mut bindings::drm_file,
    page: usize,
) -> bool {
    // SAFETY: By the function's safety requirement.
    let (bo, file) = unsafe { mapping_of(obj, file) };
    if !bo.mapping_may_write(file) {
        return false;
    }
    vram::set_bit(&bo.cpu_written, page);
    bo.cpu_writes.fetch_add(1, ordering::Release);
    true
}

/// Called by `bo_mapping.c` when `mprotect()` asks to make a mapping of
/// `obj` made through `file` (null: a dma-buf) writable.
///
/// # Safety
///
/// As [`mapping_of`].
#[no_mangle]
unsafe extern "C" fn vgsched_bo_may_write(
    obj: *mut bindings::drm_gem_object,
    file: *mut bindings::drm_file,
) -> bool {
    // SAFETY: By the function's safety requirement.
    let (bo, file) = unsafe { mapping_of(obj, file) };
    bo.mapping_may_write(file)
}

/// The record of the dma-bufs `obj` is mapped through, for `bo_mapping.c`.
///
/// # Safety
///
/// `obj` is the GEM object of a live [`Bo`].
#[no_mangle]
unsafe extern "C" fn vgsched_bo_maps_of(obj: *mut bindings::drm_gem_object) -> *mut RawMaps {
    // SAFETY: By the function's safety requirement.
    let bo = unsafe { <Bo as gem::IntoGEMObject>::from_raw(obj) };
    bo.maps.ptr.as_ptr()
}

#[pinned_drop]
impl PinnedDrop for VgObject {
    fn drop(self: Pin<&mut Self>) {
        // No job holds the object any more (jobs hold references and let
        // their copies go first): its device copy, if any, is idle and goes
        // with it.
        self.memory.forget(&self.copy);
    }
}

/// A buffer object of this driver.
pub(crate) type Bo = shmem::Object<VgObject>;

impl gem::DriverObject for VgObject {
    type Driver = VgDriver;
    type Args = (Option<Charge>, Kind);

    fn new(
        dev: &drm::Device<VgDriver>,
        size: usize,
        (charge, kind): (Option<Charge>, Kind),
    ) -> impl PinInit<Self, Error> {
        let memory = dev.engine.device_memory().clone();
        let id = memory.new_object_id();
        // A dumb buffer never goes on the device: no copy, no write
        // tracking.
        let size = match kind {
            Kind::Buffer => size,
            Kind::Dumb => 0,
        };
        let copy = DeviceCopy::new(size as u64, id);
        let pages = size.div_ceil(PAGE_SIZE);
        let cpu_written = vram::bitmap(pages);
        let cpu_taking = KVVec::from_elem(0u64, pages.div_ceil(64), GFP_KERNEL_ACCOUNT);
        try_pin_init!(VgObject {
            id,
            _charge: charge,
            dumb: kind == Kind::Dumb,
            memory,
            copy: copy?,
            shared: Atomic::new(false),
            maps: DmabufMaps::new()?,
            exported: Atomic::new(false),
            holders <- new_mutex!(KVec::new()),
            cpu_written: cpu_written?,
            cpu_taking <- new_mutex!(cpu_taking?),
            kmap <- new_mutex!(None),
            cpu_writes: Atomic::new(0),
            cpu_taken: Atomic::new(0),
            program <- new_mutex!(None),
            rules <- new_mutex!(KVec::new()),
        })
    }

    /// Every new handle: one of a file that holds the object already joins
    /// its holding; a first one made outside shared storage is read-write,
    /// or `EACCES` for a shared object.
    fn open(obj: &Bo, file: &DrmFile) -> Result {
        let client = file.client_id();
        let mut holders = obj.holders.lock();
        if let Some(h) = holders.iter_mut().find(|h| h.client == client) {
            h.holding.opened();
            return Ok(());
        }
        let holding = Holding::first(obj.is_shared()).map_err(|_| EACCES)?;
        holders.push(Holder { client, holding }, GFP_KERNEL_ACCOUNT)?;
        Ok(())
    }

    fn close(obj: &Bo, file: &DrmFile) {
        // Every handle was counted when it was made.
        kernel::warn_on!(!obj.release(file, Holding::closed));
    }

    /// A new mapping: writable only while its holder may write the object
    /// ([`VgObject::mapping_may_write`]). A read-only mapping loses
    /// `VM_MAYWRITE`, so `mprotect()` cannot make it writable later; a
    /// writable one that `mprotect()` makes read-only and then asks to
    /// make writable again is asked again (`bo_mapping.c`).
    fn mmap(obj: &Bo, file: Option<&DrmFile>, vma: &VmaNew) -> Result {
        // A dumb buffer maps as the shmem helper maps it, untracked: it
        // never reaches a job.
        if obj.dumb {
            return Ok(());
        }
        // The shmem helper refuses private mappings only while they may be
        // made writable; refuse them here for every holder alike. (A
        // shared mapping of a file opened read-only has `VM_MAYSHARE`
        // without `VM_SHARED`.)
        if vma.flags() & flags::MAYSHARE == 0 {
            return Err(EINVAL);
        }
        // Only a file that holds the object maps it. The DRM core lets a
        // file map an object from before its handle's open hook runs
        // (`drm_gem_handle_create_tail()` allows the mapping first) until
        // a refused open withdraws that again: a `GEM_OPEN` of a shared
        // object's flink name, refused, would otherwise let its caller map
        // the object in between.
        if let Some(file) = file {
            if !obj.is_held_by(file) {
                return Err(EACCES);
            }
        }
        if !obj.mapping_may_write(file) {
            if vma.writable() {
                return Err(EACCES);
            }
            vma.try_clear_maywrite()?;
        }
        // Last, once the mapping is accepted: it counts the mapping in.
        // SAFETY: `vma` is being set up by this `mmap()`, for `obj`, whose
        // reference the mapping holds from here on; `obj` is a live object
        // of this driver.
        to_result(unsafe {
            vgsched_bo_track_writes(vma.as_ptr().cast(), gem::IntoGEMObject::as_raw(obj).cast())
        })
    }

    /// A dma-buf gives its importers the object's pages to write: a file
    /// that may only read the object does not export it, unless the
    /// administrator's rule lets its user download it; a rule without
    /// the right refuses a writer too.
    fn export(obj: &Bo, file: &DrmFile) -> Result {
        let rule = obj.rule_for(file.inner().uid);
        match may_download(rule, obj.may_write(file)) {
            true => {
                obj.exported.store(true, ordering::Relaxed);
                Ok(())
            }
            false => Err(EACCES),
        }
    }
}

impl VgObject {
    /// Before a job that binds the object is queued: moves the pages the
    /// CPU wrote through its mappings since the last time into its device
    /// copy's pages to upload again ([`DeviceCopy::cpu_wrote`]), taking
    /// away the CPU's page-table entries first, so the next write to any
    /// page is reported again. In that order (`bo_mapping.c`): a write
    /// before the protection is in memory before the pages are handed
    /// over, so before any upload of them; one after it is reported anew.
    /// The takes are serialised per object, so a submission that finds
    /// nothing to take knows an earlier one has handed its pages over.
    /// Takes the mappings' locks: before any reservation lock.
    ///
    /// Without a lock when no write was reported since the last take
    /// began and that take is over (`cpu_taken`): a report sets its page's
    /// bit before it counts, so the bits of every write counted by then
    /// were taken by it, and the acquiring load of `cpu_taken` sees them
    /// handed over. A write whose report has not counted yet is one the
    /// CPU has not finished, not one made before this submission.
    pub(crate) fn take_cpu_written(bo: &Bo) {
        let exported = bo.exported.load(ordering::Relaxed);
        if !exported
            && bo.cpu_taken.load(ordering::Acquire) == bo.cpu_writes.load(ordering::Acquire)
        {
            return;
        }
        let mut taking = bo.cpu_taking.lock();
        let writes = bo.cpu_writes.load(ordering::Acquire);
        let mut any = false;
        for (taken, word) in taking.iter_mut().zip(bo.cpu_written.iter()) {
            *taken = word.xchg(0, ordering::Acquire);
            any |= *taken != 0;
        }
        // An importing device writes the pages without any report (by DMA,
        // through a kernel mapping, announced by a fence or not): every
        // page of an exported object goes to the device copy again. The
        // job waits for the importer's fences before its preparation
        // uploads them.
        if bo.exported.load(ordering::Relaxed) {
            bo.copy.cpu_wrote_all();
        }
        if any {
            Self::protect(bo);
            for (w, &bits) in taking.iter().enumerate().filter(|(_, b)| **b != 0) {
                bo.copy.cpu_wrote(w, bits);
            }
        }
        // Every write counted in `writes` is handed over.
        bo.cpu_taken.store(writes, ordering::Release);
    }

    /// Takes away every CPU page-table entry of the object, through the
    /// DRM files and every dma-buf it is mapped through: the next write to
    /// each page faults, is checked against the holder's rights and is
    /// reported. Takes the mappings' locks: before any reservation lock.
    pub(crate) fn protect(bo: &Bo) {
        // SAFETY: `bo` is a live object of this driver.
        unsafe { vgsched_bo_protect(gem::IntoGEMObject::as_raw(bo).cast()) };
    }

    /// A page of the object may be written through a CPU mapping made
    /// through `file` (`None`: a dma-buf), now: always for an object never
    /// published (its mappings were writable when made, and publishing
    /// is what makes rights change); for a published one, a dma-buf's
    /// mapping never, and a file's as [`VgObject::may_write`] says, or,
    /// when the file's handles are gone (a mapping outlives them), only if
    /// the administrator's rule for its user gives the right.
    pub(crate) fn mapping_may_write(&self, file: Option<&DrmFile>) -> bool {
        if !self.is_shared() {
            return true;
        }
        let Some(file) = file else {
            return false;
        };
        let rule = self.rule_for(file.inner().uid);
        match self.holding_of(file) {
            Some(h) => may_write_now(&h, rule),
            // Its handles are gone, and with them what its right came
            // from: only a rule that gives the right now.
            None => rule.is_some_and(|r| r.write),
        }
    }

    /// It is a dumb buffer ([`create_dumb`]).
    pub(crate) fn is_dumb(&self) -> bool {
        self.dumb
    }

    /// It has been published in shared storage.
    pub(crate) fn is_shared(&self) -> bool {
        self.shared.load(ordering::Relaxed)
    }

    /// It is published in shared storage (for good). Set under the
    /// holders' lock, so a handle made after it sees it.
    pub(crate) fn mark_shared(&self) {
        let _holders = self.holders.lock();
        self.shared.store(true, ordering::Relaxed);
    }

    /// `file` holds a handle to the object, or is about to (a
    /// shared-storage open granted it one).
    fn is_held_by(&self, file: &DrmFile) -> bool {
        let client = file.client_id();
        self.holders.lock().iter().any(|h| h.client == client)
    }

    /// `file` may write the object now: its handles were given write
    /// access, and the administrator's rule for its user, if any, lets it
    /// write (write access only a rule gave ends with the rule:
    /// [`may_write_now`]).
    pub(crate) fn may_write(&self, file: &DrmFile) -> bool {
        let rule = self.rule_for(file.inner().uid);
        self.holding_of(file)
            .is_some_and(|h| may_write_now(&h, rule))
    }

    /// [`VgObject::may_write`] for a `file` that has just looked the
    /// object up by one of its handles (`SUBMIT`, `BO_CPU_PREP`): an object
    /// never published is written by every holder (a first handle made
    /// outside shared storage is read-write, and only shared storage gives
    /// less, publishing first), so its holders' lock is not taken. As in
    /// [`VgObject::mapping_may_write`], a publication racing with the call
    /// (and a rule set on the object just published) may not be seen.
    pub(crate) fn may_write_held(&self, file: &DrmFile) -> bool {
        !self.is_shared() || self.may_write(file)
    }

    /// `file` may publish the object under another name: it may write it
    /// by its own right, not by a rule's ([`may_republish`]).
    pub(crate) fn may_republish(&self, file: &DrmFile) -> bool {
        let rule = self.rule_for(file.inner().uid);
        self.holding_of(file)
            .is_some_and(|h| may_republish(&h, rule))
    }

    /// How `file` holds the object, if it does.
    fn holding_of(&self, file: &DrmFile) -> Option<Holding> {
        let client = file.client_id();
        let holders = self.holders.lock();
        holders
            .iter()
            .find(|h| h.client == client)
            .map(|h| h.holding)
    }

    /// The administrator's rule for `uid` on the object; never one for
    /// root, nor on an object never published (rules name objects by
    /// their shared names): the mapping and submission paths of private
    /// objects take no lock for it.
    pub(crate) fn rule_for(&self, uid: u32) -> Option<Rights> {
        if uid == 0 || !self.is_shared() {
            return None;
        }
        let rules = self.rules.lock();
        rules.iter().find(|r| r.uid == uid).map(|r| r.rights)
    }

    /// Sets `uid`'s rule to `rights`, or removes it (`None`); `ENOSPC`
    /// past [`MAX_RULES`] users, `EINVAL` for root.
    pub(crate) fn set_rule(&self, uid: u32, rights: Option<Rights>) -> Result {
        if uid == 0 {
            return Err(EINVAL);
        }
        let mut rules = self.rules.lock();
        let at = rules.iter().position(|r| r.uid == uid);
        match (at, rights) {
            (Some(i), Some(rights)) => {
                if let Some(r) = rules.get_mut(i) {
                    r.rights = rights;
                }
            }
            (Some(i), None) => {
                let _ = rules.remove(i);
            }
            (None, Some(rights)) if rules.len() < MAX_RULES => {
                rules.push(UserRule { uid, rights }, GFP_KERNEL)?;
            }
            (None, Some(_)) => return Err(ENOSPC),
            (None, None) => {}
        }
        Ok(())
    }

    /// Calls `f` with each rule on the object.
    pub(crate) fn each_rule(&self, f: impl FnMut(&UserRule)) {
        self.rules.lock().iter().for_each(f);
    }

    /// A shared-storage open gave `file` access (`writable` or not) and is
    /// about to make its handle: [`gem::DriverObject::open`] will count it
    /// in. Undone by [`VgObject::ungrant`] if the handle is not made.
    pub(crate) fn grant(&self, file: &DrmFile, writable: bool, by_rule: bool) -> Result {
        let client = file.client_id();
        let mut holders = self.holders.lock();
        match holders.iter_mut().find(|h| h.client == client) {
            Some(h) => h.holding.grant(writable, by_rule),
            None => {
                let holding = Holding::granted(writable, by_rule);
                holders.push(Holder { client, holding }, GFP_KERNEL_ACCOUNT)?;
            }
        }
        Ok(())
    }

    /// The handle a [`VgObject::grant`] announced was not made.
    pub(crate) fn ungrant(&self, file: &DrmFile) {
        self.release(file, Holding::ungrant);
    }

    /// Applies `step` to `file`'s holding, forgetting the holding when the
    /// step says nothing is left; `false` if the file held nothing. When no
    /// file holds the object any more, its kept kernel mapping goes (once
    /// the locks are released: an unmap takes the reservation lock).
    fn release(&self, file: &DrmFile, step: fn(&mut Holding) -> bool) -> bool {
        let client = file.client_id();
        let unused = {
            let mut holders = self.holders.lock();
            let Some(i) = holders.iter().position(|h| h.client == client) else {
                return false;
            };
            if holders.get_mut(i).is_some_and(|h| step(&mut h.holding)) {
                let _ = holders.remove(i);
            }
            match holders.is_empty() {
                true => self.kmap.lock().take(),
                false => None,
            }
        };
        drop(unused);
        true
    }

    /// Keeps a kernel mapping of the object while a file holds a handle to
    /// it, so that a job's mapping made at `SUBMIT` only counts one more
    /// user of it instead of gathering its pages and mapping them again
    /// (milliseconds for an object of a few MiB). The pages stay pinned
    /// meanwhile, as those of a mapped object do. Called with a reference
    /// from a handle; a mapping made while the last handle went is dropped.
    pub(crate) fn keep_mapped(bo: &Bo) -> Result<SharedMap> {
        if let Some(map) = bo.kmap.lock().as_ref() {
            return Ok(map.clone());
        }
        let fresh = Arc::new(bo.owned_vmap::<0>()?, GFP_KERNEL_ACCOUNT)?;
        let (map, unused) = {
            let holders = bo.holders.lock();
            let mut kmap = bo.kmap.lock();
            match kmap.as_ref() {
                // Another caller kept one first: ours goes.
                Some(kept) => (kept.clone(), Some(fresh)),
                // The last handle went meanwhile: only the caller uses it.
                None if holders.is_empty() => (fresh, None),
                None => {
                    *kmap = Some(fresh.clone());
                    (fresh, None)
                }
            }
        };
        // Unmapped here, with no lock held.
        drop(unused);
        Ok(map)
    }

    /// The program of `instrs` instructions at the start of the object,
    /// validated for `bindings` binding slots (`EINVAL` if it is not
    /// valid). Validated once and shared until the object changes: the
    /// cache holds while no CPU write was reported and no job's write-back
    /// reached the object since it was read. Before reading, the count of
    /// reported writes is taken and then the CPU's mappings are
    /// write-protected, so a write that lands after the read is reported
    /// after the count was taken. An object ever exported as a dma-buf
    /// (an importer may write it without a report) is read every time. Takes
    /// the mappings' locks: before any reservation lock.
    pub(crate) fn program(bo: &Bo, instrs: usize, bindings: usize) -> Result<Program> {
        let mut cache = bo.program.lock();
        let cpu_writes = bo.cpu_writes.load(ordering::Acquire);
        let write_backs = bo.copy.write_backs();
        let trackable = !bo.exported.load(ordering::Relaxed);
        if let Some(c) = cache.as_ref() {
            let current = c.cpu_writes == cpu_writes && c.write_backs == write_backs;
            if trackable && current && c.instrs == instrs && c.bindings == bindings {
                return Ok(c.program.clone());
            }
        }
        if trackable {
            // SAFETY: `bo` is a live object of this driver.
            unsafe { vgsched_bo_protect(gem::IntoGEMObject::as_raw(bo).cast()) };
        }
        let map = Self::keep_mapped(bo)?;
        let mut words = KVec::with_capacity(instrs, GFP_KERNEL_ACCOUNT)?;
        for i in 0..instrs {
            let lo = (&*map).try_read32(i * isa::INSTR_BYTES)?;
            let hi = (&*map).try_read32(i * isa::INSTR_BYTES + 4)?;
            // Room for `instrs` words.
            words
                .push_within_capacity(u64::from(lo) | (u64::from(hi) << 32))
                .map_err(|_| ENOMEM)?;
        }
        drop(map);
        let filler = Instr {
            op: Op::End,
            rd: 0,
            ra: 0,
            rb: 0,
            imm: 0,
        };
        let mut program = KVec::from_elem(filler, instrs, GFP_KERNEL_ACCOUNT)?;
        isa::validate(&words, bindings, &mut program).map_err(|_| EINVAL)?;
        let program = Arc::new(program, GFP_KERNEL_ACCOUNT)?;
        *cache = Some(CachedProgram {
            instrs,
            bindings,
            cpu_writes,
            write_backs,
            program: program.clone(),
        });
        Ok(program)
    }
}

/// What an object was made for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `BO_CREATE`: an object for jobs.
    Buffer,
    /// `MODE_CREATE_DUMB`: a dumb buffer, for the CPU and other devices.
    Dumb,
}

/// Creates a zero-filled buffer object of at least `size` bytes, rounded
/// up to whole pages, for a file opened by `who`: `EINVAL` for zero,
/// `E2BIG` above [`MAX_BO_SIZE`], `EDQUOT` past the bytes its project
/// member may hold, `ENOSPC` (or, with `wait`, a wait) when the device's
/// pool is held by other members.
pub(crate) fn create(
    dev: &drm::Device<VgDriver>,
    size: u64,
    who: Opener,
    wait: bool,
) -> Result<ARef<Bo>> {
    if size == 0 {
        return Err(EINVAL);
    }
    if size > MAX_BO_SIZE {
        return Err(E2BIG);
    }
    let size = (size as usize).next_multiple_of(kernel::page::PAGE_SIZE);
    let charge = dev.book.charge(who, Resource::BoBytes, size as u64, wait)?;
    Bo::new(
        dev,
        size,
        shmem::ObjectConfig::default(),
        (charge, Kind::Buffer),
    )
}

/// `DRM_IOCTL_MODE_CREATE_DUMB`: a dumb buffer of the size the DRM core's
/// `drm_mode_size_dumb()` gives `args`, charged to the file's uid like a
/// `BO_CREATE` of that size (`EDQUOT`, `ENOSPC` without waiting), and a
/// handle to it in `file`.
///
/// It is an object of this driver, so its bytes stay charged until it is
/// freed, but it keeps the contract dumb buffers had when the DRM core's
/// shmem helper made them (a render-only driver would not offer them at
/// all, but programs may already use them): it maps with `MODE_MAP_DUMB`
/// as the shmem helper maps it, exports as a dma-buf, does not count in
/// fdinfo's device memory, vgsched's own ioctls refuse its handles with
/// `EINVAL` ([`lookup`]), and it has no vgsched size limit. It has no
/// device copy and no write tracking.
pub(crate) fn create_dumb(
    dev: &drm::Device<VgDriver>,
    file: &DrmFile,
    args: &mut drm::gem::DumbCreate<'_>,
) -> Result {
    let size = args.size(0, 0)?;
    let charge = dev
        .book
        .charge(file.inner().opener(), Resource::BoBytes, size, false)?;
    let size = usize::try_from(size).map_err(|_| E2BIG)?;
    let bo = Bo::new(
        dev,
        size,
        shmem::ObjectConfig::default(),
        (charge, Kind::Dumb),
    )?;
    // The handle holds its own reference; ours drops on return.
    args.set_handle(bo.create_handle(file)?);
    Ok(())
}

/// The object `handle` names in `file`, for vgsched's own ioctls: `ENOENT`
/// for no object, `EINVAL` for one they do not take (a dumb buffer, an
/// imported dma-buf of another device).
pub(crate) fn lookup(file: &DrmFile, handle: u32) -> Result<ARef<Bo>> {
    let bo = Bo::lookup_handle(file, handle)?;
    match bo.dumb {
        true => Err(EINVAL),
        false => Ok(bo),
    }
}
