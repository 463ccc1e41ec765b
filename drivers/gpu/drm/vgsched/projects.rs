// SPDX-License-Identifier: GPL-2.0

//! Projects in configfs: budgets, members and what their files hold.
//!
//! An administrator creates a project with `mkdir
//! /sys/kernel/config/vgsched/NAME` and gives it a budget per resource
//! (`budget_contexts`, `budget_bo_bytes`, `budget_tiles`,
//! `budget_shared_bytes`); a member is `mkdir NAME/UID` with a `role`
//! (`owner` or `member`) and a request per resource (`request_*`). The
//! Rust configfs binding of Linux 7.3 has no default groups, so projects
//! sit directly under the subsystem and members directly under their
//! project (no `projects/` or `members/` level). The arithmetic is the
//! core crate's ([`crate::vgsched_core::projects`]); this file keeps the
//! ledger, one [`Mutex`] for all projects, and hands out [`Charge`]s.
//!
//! A render-node file belongs to the member whose uid opened it. What the
//! file creates (contexts, buffer-object bytes) is charged to that member
//! and given back when the thing goes: a [`Charge`] is dropped with it,
//! which covers closing the file and killing the process. A file may
//! start its member's environment ([`Book::start`], the `START` ioctl):
//! the member's request (its *target*: the most it may hold) is reserved
//! from the pool at once, its tiles by name, and a [`Started`] kept by
//! the file gives it back. A started environment's tiles are its own:
//! no other user's job, root's included, is placed on them
//! ([`Book::reservations`]). Root's files hold no quota. A uid in no
//! project holds at most the default bound (module
//! parameters `default_contexts` and `default_bo_mib`, [`params`]), counted
//! per *namespace owner* across its files ([`Opener`]): a user namespace's
//! uids share the bound of the uid that made it, so an account does not
//! get 65 536 bounds out of one. The device's contexts are shared out by
//! [`DeviceContexts`]: uids in no project together hold at most their share
//! of them and never what members hold or reserve, nor root's reserve.

use kernel::{
    configfs,
    configfs_attrs,
    fmt::{
        self,
        Write, //
    },
    new_condvar,
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    str::{
        CString,
        Formatter, //
    },
    sync::{
        atomic::{
            ordering,
            Atomic, //
        },
        Arc,
        CondVar,
        Mutex, //
    }, //
};

mod providers;
pub(crate) mod shared;

use crate::auth::{
    Authority,
    Shown, //
};
use crate::params;
use crate::vgsched_core::projects::{
    admit_budget,
    admit_request,
    admit_start,
    charge,
    parse_name,
    parse_number,
    pool_share,
    reservation,
    start_pool,
    uncharge,
    Amounts,
    DeviceContexts,
    QuotaError,
    Resource,
    Role,
    NAME_BYTES, //
};
use crate::vgsched_core::tiles::{
    low_bits,
    Reserved,
    TileTopology,
    MAX_TILES, //
};

/// Most projects, and most members of one project.
const MAX_PROJECTS: usize = 64;
const MAX_MEMBERS: usize = 64;
/// Most namespace owners of uids in no project holding something on the
/// device at once.
const MAX_OUTSIDERS: usize = 256;

/// Who opened a file, as charges see it: its opener's effective uid in the
/// initial user namespace (project membership, root) and the uid its
/// default bound is counted against when it is in no project.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Opener {
    /// The effective uid.
    pub(crate) uid: u32,
    /// The owner of its outermost user namespace (the uid that made it, as
    /// the initial namespace sees it), or the uid itself in the initial
    /// namespace: the key of the default bound, as the kernel's ucounts
    /// charge per-user limits (`userns.c`).
    pub(crate) owner: u32,
}

extern "C" {
    /// `userns.c`.
    fn vgsched_current_bound_owner() -> u32;
}

impl Opener {
    /// The current task, with its effective uid `uid` (in the initial
    /// namespace).
    pub(crate) fn current(uid: u32) -> Self {
        // SAFETY: It only reads the current task's credentials, which it
        // cannot outlive.
        let owner = unsafe { vgsched_current_bound_owner() };
        Self { uid, owner }
    }
}

/// The uids in no project of one namespace owner that hold something, as
/// the ledger keeps them.
struct OutsiderEntry {
    owner: u32,
    used: Amounts,
}

/// One member of a project, as the ledger keeps it.
struct MemberEntry {
    uid: u32,
    /// Unique among all members ever made (from `Ledger::next_id`).
    serial: u64,
    role: Role,
    request: Amounts,
    used: Amounts,
    /// What its started environment reserved from the pool (nothing
    /// while it is not started).
    reserved: Amounts,
    /// The tiles its started environment reserved, as many as `reserved`
    /// counts: other users' jobs submitted since are not placed on them.
    reserved_tiles: u32,
    /// Files that started its environment and are open.
    started: u32,
    /// While an owner, it may publish in the device's public folders.
    publish_public: bool,
}

impl MemberEntry {
    /// What it takes from the device's pool.
    fn share(&self) -> Amounts {
        pool_share(&self.reserved, &self.used)
    }
}

/// One project.
struct ProjectEntry {
    id: u64,
    /// Its configfs directory's name, which shared-storage paths use.
    name: CString,
    budget: Amounts,
    members: KVec<MemberEntry>,
    /// The names of its shared storage (`shared.rs`).
    names: KVec<shared::SharedName>,
    /// The tiles enrolled into it (`providers.rs`), as a mask.
    tiles: u32,
}

impl ProjectEntry {
    /// The role of `uid` in the project, if it is a member.
    fn role_of(&self, uid: u32) -> Option<Role> {
        self.members.iter().find(|m| m.uid == uid).map(|m| m.role)
    }

    /// The requests of every member but the one of serial `serial`,
    /// summed. A member's request is its target: what it may hold, and
    /// what its environment reserves when it starts.
    fn requests_except(&self, serial: Option<u64>) -> Amounts {
        self.members
            .iter()
            .filter(|m| Some(m.serial) != serial)
            .fold(Amounts::ZERO, |sum, m| sum.plus(&m.request))
    }
}

/// Every project, its members and their charges.
///
/// # Invariants
///
/// A uid is a member of one project at most; each project's members'
/// requests sum to no more than its budget; `used` is what the live
/// [`Charge`]s of a member add up to; `pool_used` is the sum over members
/// of their [`pool_share`] (what they hold, or what their started
/// environment reserved where that is more) plus what the charges of
/// removed members still hold; a member's `reserved` and `reserved_tiles`
/// are nothing while its `started` is 0, and its `reserved` counts at
/// least the tiles of its `reserved_tiles` (exactly, unless its file had
/// not presented their access codes when it started), which are enrolled
/// for its project; the members' `reserved_tiles` are disjoint, and their
/// union is the book's `reserved_tiles` (every change made under this
/// lock); `outsiders_used`
/// is the sum of the outsiders' entries' `used`, and of contexts it and
/// `pool_used` together never pass the book's [`DeviceContexts::charged`].
struct Ledger {
    projects: KVec<ProjectEntry>,
    next_id: u64,
    /// What all members hold together: the part of the device's pool in
    /// use.
    pool_used: Amounts,
    /// The namespace owners of uids in no project that hold something (an
    /// entry goes when they hold nothing any more).
    outsiders: KVec<OutsiderEntry>,
    /// What all of them hold together.
    outsiders_used: Amounts,
    /// The device's tiles as providers of the pool (`providers.rs`).
    providers: providers::Providers,
    /// Its nodes as providers of the pool, a node's tiles under one code.
    node_providers: providers::Providers,
    /// The names of the device's public folders (`shared.rs`).
    public: KVec<shared::SharedName>,
}

impl Ledger {
    fn project(&mut self, id: u64) -> Option<&mut ProjectEntry> {
        self.projects.iter_mut().find(|p| p.id == id)
    }

    /// The member of serial `serial`, if it still exists.
    fn member_by_serial(&mut self, id: u64, serial: u64) -> Option<&mut MemberEntry> {
        self.project(id)?
            .members
            .iter_mut()
            .find(|m| m.serial == serial)
    }

    /// The project `uid` is a member of.
    fn project_of(&self, uid: u32) -> Option<u64> {
        self.projects
            .iter()
            .find(|p| p.members.iter().any(|m| m.uid == uid))
            .map(|p| p.id)
    }
}

/// The projects of the device.
#[pin_data]
pub(crate) struct Book {
    #[pin]
    ledger: Mutex<Ledger>,
    /// Signalled whenever something is given back to the pool.
    #[pin]
    released: CondVar,
    /// The device's pool: what all members of all projects may hold
    /// together.
    pool: Amounts,
    /// How the device's contexts are shared out between members, uids in
    /// no project and root.
    device: DeviceContexts,
    /// The device's tiles.
    tiles: u32,
    /// Its nodes of tiles: the providers that enrol a node at once.
    topology: TileTopology,
    /// The tiles in the pool for every user (`providers.rs`), as a mask;
    /// changed only under the ledger's lock, read without it, so that a
    /// `SUBMIT` on a device whose every tile serves everyone takes no
    /// lock for its tiles.
    everyone_tiles: Atomic<u32>,
    /// The tiles started environments reserved, all of them, as a mask;
    /// changed only under the ledger's lock, read without it, so that a
    /// `SUBMIT` takes no lock for reservations while there are none.
    reserved_tiles: Atomic<u32>,
    /// The device's access code.
    #[pin]
    pub(crate) authority: Authority,
}

impl Book {
    /// No projects, on a device of the tiles of `topology` and `contexts`
    /// contexts (the engine's limit) whose pool is `pool`; the tiles start
    /// in the pool for everyone, or outside it (`tiles_outside`).
    pub(crate) fn new(
        pool: Amounts,
        topology: &TileTopology,
        contexts: u64,
        tiles_outside: bool,
    ) -> Result<Arc<Self>> {
        let tiles = topology.tiles();
        Arc::pin_init(
            try_pin_init!(Self {
                ledger <- new_mutex!(Ledger {
                    projects: KVec::with_capacity(MAX_PROJECTS, GFP_KERNEL)?,
                    next_id: 1,
                    pool_used: Amounts::ZERO,
                    outsiders: KVec::with_capacity(MAX_OUTSIDERS, GFP_KERNEL)?,
                    outsiders_used: Amounts::ZERO,
                    providers: providers::providers_at_load(),
                    node_providers: providers::providers_at_load(),
                    public: KVec::new(),
                }),
                released <- new_condvar!("vgsched::Book::released"),
                pool,
                device: DeviceContexts::new(contexts, pool.get(Resource::Contexts)),
                authority <- Authority::new(tiles),
                everyone_tiles: Atomic::new(match tiles_outside {
                    true => 0,
                    false => low_bits(tiles),
                }),
                reserved_tiles: Atomic::new(0),
                // After the authority, which reads the parameter.
                tiles: tiles.min(MAX_TILES as u32),
                topology: *topology,
            }),
            GFP_KERNEL,
        )
    }

    /// Charges `amount` of `r` to the member `who` is: `Ok(None)` for root
    /// and for nothing at all, `EDQUOT` past the member's request. When the
    /// device's pool is held by other members (or, of contexts, the device
    /// by uids in no project), `ENOSPC`, or with `wait` the caller sleeps
    /// until enough comes back (`ERESTARTSYS` on a signal). A uid in no
    /// project is charged against the default bound of its namespace
    /// owner instead ([`Book::charge_outsider`]).
    pub(crate) fn charge(
        self: &Arc<Self>,
        who: Opener,
        r: Resource,
        amount: u64,
        wait: bool,
    ) -> Result<Option<Charge>> {
        let uid = who.uid;
        if uid == 0 || amount == 0 {
            return Ok(None);
        }
        let mut ledger = self.ledger.lock();
        loop {
            let Some(project) = ledger.project_of(uid) else {
                return self.charge_outsider(&mut ledger, who.owner, r, amount);
            };
            let limit = self.device.members_pool(&self.pool);
            let taken = self.device.members_taken(
                &self.pool,
                &ledger.pool_used,
                ledger.outsiders_used.get(Resource::Contexts),
            );
            let pool = limit.get(r);
            let pool_free = pool.saturating_sub(taken.get(r));
            let Some(p) = ledger.project(project) else {
                return Ok(None);
            };
            let Some(m) = p.members.iter_mut().find(|m| m.uid == uid) else {
                return Ok(None);
            };
            // Room the other members and the uids in no project could ever
            // give back: without it a wait would never end.
            let after = m.used.get(r).saturating_add(amount);
            let reachable = after.max(m.reserved.get(r)) <= pool;
            match charge(&m.request, &m.used, &m.reserved, r, amount, pool_free) {
                Ok(taken) => {
                    m.used.set(r, after);
                    let serial = m.serial;
                    let used = ledger.pool_used.get(r).saturating_add(taken);
                    ledger.pool_used.set(r, used);
                    return Ok(Some(Charge {
                        book: self.clone(),
                        holder: Holder::Member { project, serial },
                        resource: r,
                        amount,
                    }));
                }
                Err(QuotaError::PoolBusy(_)) if wait && reachable => {
                    if self.released.wait_interruptible(&mut ledger) {
                        return Err(ERESTARTSYS);
                    }
                }
                Err(e) => return Err(quota_errno(e)),
            }
        }
    }

    /// Charges `amount` of `r` to a uid in no project whose namespace
    /// owner is `owner` against the default bound in force (`EDQUOT` past
    /// it), counted across the files of all the owner's uids; `ENOSPC`
    /// past [`MAX_OUTSIDERS`] owners holding something, and for contexts
    /// past what uids in no project may hold together
    /// ([`DeviceContexts::admit_outsiders`]). `Ok(None)` for a resource
    /// the bound leaves unlimited: only what is bounded takes an entry.
    fn charge_outsider(
        self: &Arc<Self>,
        ledger: &mut Ledger,
        owner: u32,
        r: Resource,
        amount: u64,
    ) -> Result<Option<Charge>> {
        let bound = params::default_request();
        if bound.get(r) == u64::MAX {
            // Not bounded (tiles, shared bytes): nothing to count, and no
            // entry taken for it.
            return Ok(None);
        }
        let i = match ledger.outsiders.iter().position(|o| o.owner == owner) {
            Some(i) => i,
            None => {
                let used = Amounts::ZERO;
                // Room for MAX_OUTSIDERS was reserved with the book.
                ledger
                    .outsiders
                    .push_within_capacity(OutsiderEntry { owner, used })
                    .map_err(|_| ENOSPC)?;
                ledger.outsiders.len() - 1
            }
        };
        // The owner's bound first (`EDQUOT`), then the device's share.
        let together = ledger.outsiders_used.get(r);
        let members = ledger.pool_used.get(r);
        let o = ledger.outsiders.get_mut(i).ok_or(EINVAL)?;
        let charged =
            charge(&bound, &o.used, &Amounts::ZERO, r, amount, u64::MAX).and_then(|_| match r {
                Resource::Contexts => self.device.admit_outsiders(together, members, amount),
                _ => Ok(()),
            });
        if charged.is_ok() {
            o.used.set(r, o.used.get(r).saturating_add(amount));
            ledger
                .outsiders_used
                .set(r, together.saturating_add(amount));
        }
        // A new entry that got nothing goes.
        ledger.outsiders.retain(|o| o.used != Amounts::ZERO);
        charged.map_err(quota_errno)?;
        Ok(Some(Charge {
            book: self.clone(),
            holder: Holder::Outsider { owner },
            resource: r,
            amount,
        }))
    }

    /// A new project with room for `members`; its id. `ENOSPC` past
    /// [`MAX_PROJECTS`].
    fn add_project(&self, name: CString, members: KVec<MemberEntry>) -> Result<u64> {
        let mut ledger = self.ledger.lock();
        if ledger.projects.len() >= MAX_PROJECTS {
            return Err(ENOSPC);
        }
        let id = ledger.next_id;
        ledger
            .projects
            .push_within_capacity(ProjectEntry {
                id,
                name,
                budget: Amounts::ZERO,
                members,
                names: KVec::new(),
                tiles: 0,
            })
            .map_err(|_| ENOSPC)?;
        ledger.next_id += 1;
        Ok(id)
    }

    /// `uid` joins project `project`; its member serial. `EEXIST` if the
    /// uid is a member of a project already (a file has one owner),
    /// `ENOSPC` past [`MAX_MEMBERS`].
    fn add_member(&self, project: u64, uid: u32) -> Result<u64> {
        let mut ledger = self.ledger.lock();
        if ledger.project_of(uid).is_some() {
            return Err(EEXIST);
        }
        let serial = ledger.next_id;
        let p = ledger.project(project).ok_or(ENOENT)?;
        // A new member requests nothing yet. Room for MAX_MEMBERS was
        // reserved with the project.
        p.members
            .push_within_capacity(MemberEntry {
                uid,
                serial,
                role: Role::Member,
                request: Amounts::ZERO,
                used: Amounts::ZERO,
                reserved: Amounts::ZERO,
                reserved_tiles: 0,
                started: 0,
                publish_public: false,
            })
            .map_err(|_| ENOSPC)?;
        ledger.next_id += 1;
        Ok(serial)
    }

    fn uncharge(&self, holder: Holder, r: Resource, amount: u64) {
        let mut ledger = self.ledger.lock();
        match holder {
            Holder::Member { project, serial } => {
                // The pool gets it back even from a member that is gone;
                // from a started member, only what was past its
                // reservation.
                let freed = match ledger.member_by_serial(project, serial) {
                    Some(m) => {
                        let used = m.used.get(r);
                        m.used.set(r, used.saturating_sub(amount));
                        uncharge(m.reserved.get(r), used, amount)
                    }
                    None => amount,
                };
                let used = ledger.pool_used.get(r).saturating_sub(freed);
                ledger.pool_used.set(r, used);
            }
            Holder::Outsider { owner } => {
                let outsiders = &mut ledger.outsiders;
                if let Some(o) = outsiders.iter_mut().find(|o| o.owner == owner) {
                    o.used.set(r, o.used.get(r).saturating_sub(amount));
                }
                outsiders.retain(|o| o.used != Amounts::ZERO);
                let together = ledger.outsiders_used.get(r).saturating_sub(amount);
                ledger.outsiders_used.set(r, together);
            }
        }
        drop(ledger);
        self.released.notify_all();
    }
}

impl Book {
    /// Starts the environment of the member `uid` is, for one more file:
    /// the first start reserves the member's target (its request, as it
    /// is now) from the device's pool in one step, tiles included (of
    /// them at most the device's, [`start_pool`], admitted against those
    /// the providers enrolled for the member), after which nothing the
    /// member creates within it is refused by the pool or by the device;
    /// later starts only count the file. Its tiles are named ones
    /// ([`TileTopology::reserve`]): enrolled for the member, reserved by
    /// no other environment, with a node that holds its largest job, and
    /// among `authorized` (those the file's jobs may run on) if they can
    /// be; otherwise of the tiles named only those in `authorized` are
    /// kept from others. `ENOENT` for a uid in no project; when the pool (or, of
    /// contexts, what uids in no project leave of the device:
    /// [`DeviceContexts::members_taken`]) or the enrolled tiles cannot
    /// give it all now, `ENOSPC`, or with `wait` the caller sleeps until
    /// they can (`ERESTARTSYS` on a signal): something given back, a
    /// request lowered, an environment stopped, an enrolment or a
    /// revocation wakes it; `ENOSPC` without a wait if the pool could
    /// never give it.
    pub(crate) fn start(
        self: &Arc<Self>,
        uid: u32,
        wait: bool,
        authorized: u32,
    ) -> Result<Started> {
        let pool = start_pool(&self.device.members_pool(&self.pool), self.tiles);
        let mut ledger = self.ledger.lock();
        loop {
            let project = ledger.project_of(uid).ok_or(ENOENT)?;
            let pool_used = ledger.pool_used;
            let outsiders = ledger.outsiders_used.get(Resource::Contexts);
            let taken = self.device.members_taken(&pool, &pool_used, outsiders);
            let everyone = self.everyone();
            let p = ledger.project(project).ok_or(ENOENT)?;
            let enrolled_tiles = (everyone | p.tiles) & low_bits(self.tiles);
            let enrolled = u64::from(enrolled_tiles.count_ones());
            let reserved_tiles = self.reserved_tiles.load(ordering::Relaxed);
            let m = p.members.iter_mut().find(|m| m.uid == uid).ok_or(ENOENT)?;
            let serial = m.serial;
            let started = || Started {
                book: self.clone(),
                project,
                serial,
            };
            if m.started > 0 {
                m.started = m.started.checked_add(1).ok_or(EOVERFLOW)?;
                return Ok(started());
            }
            let target = m.request;
            // At most the device's tiles: a u32.
            let tiles =
                u32::try_from(reservation(&target, &pool).get(Resource::Tiles)).unwrap_or(u32::MAX);
            // The tiles themselves, by name: enrolled tiles that could
            // never hold the environment's largest job wait for the
            // providers, as too few do; then, of the enrolled ones no
            // other environment reserved, those the file may use, or the
            // pool is busy. A file that has not presented the codes of
            // enough of them (uAPI 1.10 never asked it to before a start)
            // still starts, as it did, its count reserved; of its tiles
            // only those it may use are kept from others.
            let reserve = |from| self.topology.reserve(from, tiles);
            let admitted =
                admit_start(&target, &m.used, &pool, &taken, enrolled).and_then(|take| {
                    reserve(enrolled_tiles)
                        .map(|_| take)
                        .ok_or(QuotaError::NotEnrolled)
                });
            let free = enrolled_tiles & !reserved_tiles;
            let admitted = admitted.and_then(|take| {
                reserve(free & authorized)
                    .or_else(|| Some(reserve(free)? & authorized))
                    .map(|mine| (take, mine))
                    .ok_or(QuotaError::PoolBusy(Resource::Tiles))
            });
            match admitted {
                Ok((take, mine)) => {
                    m.reserved = reservation(&target, &pool);
                    m.reserved_tiles = mine;
                    m.started = 1;
                    ledger.pool_used = pool_used.plus(&take);
                    self.reserved_tiles
                        .store(reserved_tiles | mine, ordering::Relaxed);
                    return Ok(started());
                }
                Err(QuotaError::PoolBusy(_) | QuotaError::NotEnrolled) if wait => {
                    if self.released.wait_interruptible(&mut ledger) {
                        return Err(ERESTARTSYS);
                    }
                }
                Err(e) => return Err(quota_errno(e)),
            }
        }
    }

    /// A file that started the environment of member `serial` of project
    /// `project` is closed: the last one gives back to the pool what the
    /// reservation held beyond what the member holds.
    fn stop(&self, project: u64, serial: u64) {
        let mut ledger = self.ledger.lock();
        let Some(m) = ledger.member_by_serial(project, serial) else {
            return;
        };
        m.started = m.started.saturating_sub(1);
        if m.started > 0 {
            return;
        }
        let freed = m.share().minus(&m.used);
        m.reserved = Amounts::ZERO;
        let tiles = core::mem::take(&mut m.reserved_tiles);
        ledger.pool_used = ledger.pool_used.minus(&freed);
        self.unreserve(tiles);
        drop(ledger);
        self.released.notify_all();
    }

    /// A started environment's `tiles` are no longer reserved; the caller
    /// holds the ledger's lock, which orders every change.
    fn unreserve(&self, tiles: u32) {
        let all = self.reserved_tiles.load(ordering::Relaxed);
        self.reserved_tiles.store(all & !tiles, ordering::Relaxed);
    }

    /// The tiles started environments reserved, as a job `uid` submits
    /// now sees them: its own member's, where it runs if it fits, and
    /// other environments', where it never runs. Nothing (and no lock
    /// taken) while no environment reserved any.
    pub(crate) fn reservations(&self, uid: u32) -> Reserved {
        if self.reserved_tiles.load(ordering::Relaxed) == 0 {
            return Reserved::default();
        }
        let mut ledger = self.ledger.lock();
        let all = self.reserved_tiles.load(ordering::Relaxed);
        let own = match ledger.project_of(uid) {
            Some(id) => ledger
                .project(id)
                .and_then(|p| p.members.iter().find(|m| m.uid == uid))
                .map_or(0, |m| m.reserved_tiles),
            None => 0,
        };
        Reserved {
            own,
            others: all & !own,
        }
    }

    /// A revocation took tiles out of the enrolment: each started
    /// environment keeps of its reserved tiles only those still enrolled
    /// for its project (`everyone`'s or the project's own), and gives the
    /// rest back, their count with them. The caller holds the ledger's
    /// lock.
    fn keep_enrolled_reservations(&self, ledger: &mut Ledger, everyone: u32) {
        let mut all = 0;
        let mut freed = Amounts::ZERO;
        for p in ledger.projects.iter_mut() {
            let enrolled = everyone | p.tiles;
            for m in p.members.iter_mut() {
                let before = m.share();
                let revoked = m.reserved_tiles & !enrolled;
                m.reserved_tiles &= enrolled;
                let count = m.reserved.get(Resource::Tiles);
                m.reserved.set(
                    Resource::Tiles,
                    count.saturating_sub(u64::from(revoked.count_ones())),
                );
                freed = freed.plus(&before.minus(&m.share()));
                all |= m.reserved_tiles;
            }
        }
        ledger.pool_used = ledger.pool_used.minus(&freed);
        self.reserved_tiles.store(all, ordering::Relaxed);
    }
}

/// A file's start of its member's environment ([`Book::start`]); the
/// environment stops when the last one is dropped, with its file.
pub(crate) struct Started {
    book: Arc<Book>,
    project: u64,
    serial: u64,
}

impl Started {
    /// The member it started still exists (not removed by the
    /// administrator since).
    pub(crate) fn is_live(&self) -> bool {
        let mut ledger = self.book.ledger.lock();
        ledger.member_by_serial(self.project, self.serial).is_some()
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        self.book.stop(self.project, self.serial);
    }
}

/// The errno of a refused quota operation.
fn quota_errno(e: QuotaError) -> Error {
    match e {
        QuotaError::OverQuota(_) => EDQUOT,
        QuotaError::PoolBusy(_) | QuotaError::PoolTooSmall(_) | QuotaError::NotEnrolled => ENOSPC,
    }
}

/// Who a [`Charge`] counts against.
#[derive(Clone, Copy)]
enum Holder {
    /// A project's member: `serial` tells it from a later member of the
    /// same uid.
    Member { project: u64, serial: u64 },
    /// Uids in no project of one namespace owner, against the default
    /// bound.
    Outsider { owner: u32 },
}

/// Something a file holds, counted against its member's request (or, for
/// a uid in no project, the default bound) until it is dropped.
pub(crate) struct Charge {
    book: Arc<Book>,
    holder: Holder,
    resource: Resource,
    amount: u64,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.book.uncharge(self.holder, self.resource, self.amount);
    }
}

/// A number written to configfs ([`parse_number`]); `EINVAL` for
/// anything else.
fn parse_u64(page: &[u8]) -> Result<u64> {
    parse_number(page).ok_or(EINVAL)
}

/// Shows in `page` what `f` writes; `EINVAL` if it does not fit.
fn show(
    page: &mut [u8; PAGE_SIZE],
    f: impl FnOnce(&mut Formatter<'_>) -> fmt::Result,
) -> Result<usize> {
    let mut w = Formatter::new(&mut page[..]);
    f(&mut w).map_err(|_| EINVAL)?;
    Ok(w.bytes_written())
}

/// Shows `name value` lines of every resource.
fn show_amounts(page: &mut [u8; PAGE_SIZE], a: &Amounts) -> Result<usize> {
    show(page, |w| {
        Resource::ALL
            .into_iter()
            .try_for_each(|r| writeln!(w, "{} {}", r.name(), a.get(r)))
    })
}

/// The item types of project and member directories, made once.
#[derive(Clone, Copy)]
struct Types {
    project: &'static configfs::ItemType<configfs::Group<Project>, Project>,
    member: &'static configfs::ItemType<configfs::Group<Member>, Member>,
}

/// The data of the subsystem's root: the device's projects.
#[pin_data]
pub(crate) struct Registry {
    book: Arc<Book>,
    types: Types,
}

/// The configfs subsystem `vgsched`.
pub(crate) type Subsystem = configfs::Subsystem<Registry>;

impl Registry {
    /// The subsystem of `book`'s projects, registered when pinned.
    pub(crate) fn subsystem(book: Arc<Book>) -> impl PinInit<Subsystem, Error> {
        let item_type = configfs_attrs! {
            container: configfs::Subsystem<Registry>,
            data: Registry,
            child: Project,
            attributes: [
                device_code: 0,
                tile_codes: 1,
                providers: 2,
                rules: 3,
                public: 4,
            ],
        };
        // Every `configfs_attrs!` writes its statics when it runs: once, here.
        let types = Types {
            project: configfs_attrs! {
                container: configfs::Group<Project>,
                data: Project,
                child: Member,
                attributes: [
                    budget_contexts: 0,
                    budget_bo_bytes: 1,
                    budget_tiles: 2,
                    budget_shared_bytes: 3,
                    requested: 4,
                    shared: 5,
                ],
            },
            member: configfs_attrs! {
                container: configfs::Group<Member>,
                data: Member,
                attributes: [
                    role: 0,
                    request_contexts: 1,
                    request_bo_bytes: 2,
                    request_tiles: 3,
                    request_shared_bytes: 4,
                    usage: 5,
                    reserved: 6,
                    publish_public: 7,
                ],
            },
        };
        configfs::Subsystem::new(
            c"vgsched",
            item_type,
            try_pin_init!(Registry { book, types }),
        )
    }
}

/// A project directory. Its ledger entry goes with it, once configfs has
/// removed the directory (only empty ones can be: members first).
#[pin_data(PinnedDrop)]
pub(crate) struct Project {
    id: u64,
    book: Arc<Book>,
    types: Types,
}

#[pinned_drop]
impl PinnedDrop for Project {
    fn drop(self: Pin<&mut Self>) {
        let id = self.id;
        let mut ledger = self.book.ledger.lock();
        let gone = match ledger.projects.iter().position(|p| p.id == id) {
            Some(i) => ledger.projects.remove(i).ok(),
            None => None,
        };
        drop(ledger);
        // Its shared names give their charges back, which takes the
        // ledger lock: dropped after it.
        drop(gone);
    }
}

/// A member directory. Its ledger entry goes with it; what its files
/// still hold is then counted against the pool only (their charges find no
/// member), until it is freed.
#[pin_data(PinnedDrop)]
pub(crate) struct Member {
    /// Its entry's serial: charges of an earlier member of the same uid
    /// never touch it.
    serial: u64,
    book: Arc<Book>,
    project: u64,
}

#[pinned_drop]
impl PinnedDrop for Member {
    fn drop(self: Pin<&mut Self>) {
        let serial = self.serial;
        let mut ledger = self.book.ledger.lock();
        let mut freed = Amounts::ZERO;
        let mut tiles = 0;
        if let Some(p) = ledger.project(self.project) {
            // A started environment's reservation goes with it, and so do
            // the administrator's rules for it on the project's objects.
            if let Some(m) = p.members.iter().find(|m| m.serial == serial) {
                freed = m.share().minus(&m.used);
                tiles = m.reserved_tiles;
                shared::forget_rules(p, m.uid);
            }
            p.members.retain(|m| m.serial != serial);
        }
        ledger.pool_used = ledger.pool_used.minus(&freed);
        self.book.unreserve(tiles);
        drop(ledger);
        self.book.released.notify_all();
        // What its files still hold counts against the pool until it is
        // freed (`Book::uncharge`).
    }
}

#[vtable]
impl configfs::GroupOperations for Registry {
    type Child = Project;

    fn make_group(&self, name: &CStr) -> Result<impl PinInit<configfs::Group<Project>, Error>> {
        // Shared-storage paths name the project: it must be a valid name.
        let bytes = name.to_bytes();
        let mut field = [0u8; NAME_BYTES];
        field
            .get_mut(..bytes.len())
            .ok_or(EINVAL)?
            .copy_from_slice(bytes);
        parse_name(&field).ok_or(EINVAL)?;
        let entry_name = CString::try_from(name)?;
        let name = CString::try_from(name)?;
        let members = KVec::with_capacity(MAX_MEMBERS, GFP_KERNEL)?;
        let book = self.book.clone();
        let types = self.types;
        // The ledger entry is made as the group is initialised, after every
        // allocation that could fail: a refused mkdir leaves nothing.
        Ok(configfs::Group::new(
            name,
            types.project,
            try_pin_init!(Project {
                id: book.add_project(entry_name, members)?,
                book,
                types,
            }),
        ))
    }
}

#[vtable]
impl configfs::GroupOperations for Project {
    type Child = Member;

    fn make_group(&self, name: &CStr) -> Result<impl PinInit<configfs::Group<Member>, Error>> {
        let uid = u32::try_from(parse_u64(name.to_bytes())?).map_err(|_| EINVAL)?;
        let name = CString::try_from(name)?;
        let book = self.book.clone();
        let project = self.id;
        // The ledger entry is made as the group is initialised (see above).
        Ok(configfs::Group::new(
            name,
            self.types.member,
            try_pin_init!(Member {
                serial: book.add_member(project, uid)?,
                book,
                project,
            }),
        ))
    }
}

impl Project {
    /// Runs `f` on the project's ledger entry, under the ledger lock.
    fn with<R>(&self, f: impl FnOnce(&mut ProjectEntry) -> Result<R>) -> Result<R> {
        f(self.book.ledger.lock().project(self.id).ok_or(ENOENT)?)
    }

    fn show_budget(&self, r: Resource, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let v = self.with(|p| Ok(p.budget.get(r)))?;
        show(page, |w| writeln!(w, "{v}"))
    }

    /// A new budget; refused (`EDQUOT`) below what the members request.
    fn store_budget(&self, r: Resource, page: &[u8]) -> Result {
        let v = parse_u64(page)?;
        self.with(|p| {
            let mut budget = p.budget;
            budget.set(r, v);
            admit_budget(&budget, &p.requests_except(None)).map_err(quota_errno)?;
            p.budget = budget;
            Ok(())
        })
    }
}

impl Member {
    /// Runs `f` on the member's ledger entry and its project's, under the
    /// ledger lock.
    fn with<R>(&self, f: impl FnOnce(&mut ProjectEntry, usize) -> Result<R>) -> Result<R> {
        let mut ledger = self.book.ledger.lock();
        let p = ledger.project(self.project).ok_or(ENOENT)?;
        let i = p
            .members
            .iter()
            .position(|m| m.serial == self.serial)
            .ok_or(ENOENT)?;
        f(p, i)
    }

    /// Runs `f` on the member's ledger entry.
    fn with_entry<R>(&self, f: impl FnOnce(&mut MemberEntry) -> R) -> Result<R> {
        self.with(|p, i| p.members.get_mut(i).map(f).ok_or(ENOENT))
    }

    fn show_request(&self, r: Resource, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let v = self.with_entry(|m| m.request.get(r))?;
        show(page, |w| writeln!(w, "{v}"))
    }

    /// A new request; refused (`EDQUOT`) if it does not fit beside the
    /// other members' in the budget.
    fn store_request(&self, r: Resource, page: &[u8]) -> Result {
        let v = parse_u64(page)?;
        self.with(|p, i| {
            let others = p.requests_except(Some(self.serial));
            let budget = p.budget;
            let mut request = p.members.get(i).ok_or(ENOENT)?.request;
            request.set(r, v);
            admit_request(&budget, &others, &request).map_err(quota_errno)?;
            let m = p.members.get_mut(i).ok_or(ENOENT)?;
            m.request = request;
            Ok(())
        })?;
        // A smaller target may let the member's waiting start in.
        self.book.released.notify_all();
        Ok(())
    }
}

/// The configfs attributes that read and write one resource's amount.
macro_rules! amount_attributes {
    ($data:ty, $show:ident, $store:ident, $($id:literal => $r:expr),* $(,)?) => {$(
        #[vtable]
        impl configfs::AttributeOperations<$id> for $data {
            type Data = $data;

            fn show(data: &$data, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
                data.$show($r, page)
            }

            fn store(data: &$data, page: &[u8]) -> Result {
                data.$store($r, page)
            }
        }
    )*};
}

amount_attributes!(Project, show_budget, store_budget,
    0 => Resource::Contexts,
    1 => Resource::BoBytes,
    2 => Resource::Tiles,
    3 => Resource::SharedBytes,
);

amount_attributes!(Member, show_request, store_request,
    1 => Resource::Contexts,
    2 => Resource::BoBytes,
    3 => Resource::Tiles,
    4 => Resource::SharedBytes,
);

/// Writes `shown` as configfs shows a code: 32 hex digits once, then its
/// state.
fn write_code(w: &mut impl Write, shown: Shown) -> fmt::Result {
    match shown {
        Shown::New(code) => code.iter().try_for_each(|b| write!(w, "{b:02x}")),
        Shown::Open => w.write_str("open"),
        Shown::Required => w.write_str("required"),
        Shown::Revoked => w.write_str("revoked"),
    }
}

/// Applies the configfs command `word` (`generate`, `revoke`, `open`) to
/// `provider`'s code; anything else is `EINVAL`.
fn code_command(a: &Authority, word: &[u8], provider: u32) -> Result {
    match word {
        b"generate" => a.generate(provider),
        b"revoke" => a.revoke(provider),
        b"open" => a.open(provider),
        _ => Err(EINVAL),
    }
}

/// `device_code`: `generate` makes a new access code for the whole
/// device, which the next read shows once (32 hex digits); `revoke`
/// withdraws it (no file but root's may submit until the next); `open`
/// lets every file submit again. Reads say `open`, `required` (a code is
/// valid) or `revoked` after that.
#[vtable]
impl configfs::AttributeOperations<0> for Registry {
    type Data = Registry;

    fn show(data: &Registry, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let shown = data.book.authority.show(0)?;
        show(page, |w| {
            write_code(w, shown)?;
            writeln!(w)
        })
    }

    fn store(data: &Registry, page: &[u8]) -> Result {
        let word = page.strip_suffix(b"\n").unwrap_or(page);
        code_command(&data.book.authority, word, 0)
    }
}

/// `tile_codes`: `generate T`, `revoke T` and `open T` act on the code of
/// tile `T` as `device_code` does on the device's. Reads show one line per
/// tile that is not open: `T` and its new code (once) or its state.
#[vtable]
impl configfs::AttributeOperations<1> for Registry {
    type Data = Registry;

    fn show(data: &Registry, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let a = &data.book.authority;
        show(page, |w| {
            for tile in 0..a.tiles() {
                let Ok(shown) = a.show(tile + 1) else {
                    break;
                };
                if !matches!(shown, Shown::Open) {
                    write!(w, "{tile} ")?;
                    write_code(w, shown)?;
                    writeln!(w)?;
                }
            }
            Ok(())
        })
    }

    fn store(data: &Registry, page: &[u8]) -> Result {
        let line = page.strip_suffix(b"\n").unwrap_or(page);
        let mut words = line.split(|&b| b == b' ').filter(|w| !w.is_empty());
        let (Some(word), Some(tile), None) = (words.next(), words.next(), words.next()) else {
            return Err(EINVAL);
        };
        let tile = u32::try_from(parse_u64(tile)?).map_err(|_| EINVAL)?;
        let a = &data.book.authority;
        if tile >= a.tiles() {
            return Err(EINVAL);
        }
        code_command(a, word, tile + 1)
    }
}

/// `providers`: the device's tiles as providers of the pool
/// (`providers.rs`): `code T`, `enrol T CODE [PROJECT]` and `revoke T`;
/// reads show whom each tile serves.
#[vtable]
impl configfs::AttributeOperations<2> for Registry {
    type Data = Registry;

    fn show(data: &Registry, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        data.book.show_providers(page)
    }

    fn store(data: &Registry, page: &[u8]) -> Result {
        data.book.provider_command(page)
    }
}

/// `requested`: what the members request together, read-only.
#[vtable]
impl configfs::AttributeOperations<4> for Project {
    type Data = Project;

    fn show(data: &Project, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let sum = data.with(|p| Ok(p.requests_except(None)))?;
        show_amounts(page, &sum)
    }
}

/// `shared`: the names of the project's shared storage, one per line
/// (`KIND/FOLDER/NAME SIZE PUBLISHER`), read-only.
#[vtable]
impl configfs::AttributeOperations<5> for Project {
    type Data = Project;

    fn show(data: &Project, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let mut ledger = data.book.ledger.lock();
        let p = ledger.project(data.id).ok_or(ENOENT)?;
        shared::list(&p.names, page)
    }
}

/// `role`: `owner` or `member`; anything else is `EINVAL`.
#[vtable]
impl configfs::AttributeOperations<0> for Member {
    type Data = Member;

    fn show(data: &Member, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let role = data.with_entry(|m| m.role)?;
        show(page, |w| writeln!(w, "{}", role.name()))
    }

    fn store(data: &Member, page: &[u8]) -> Result {
        let role = Role::parse(page).ok_or(EINVAL)?;
        data.with_entry(|m| m.role = role)
    }
}

/// `usage`: what the member's files hold now, read-only.
#[vtable]
impl configfs::AttributeOperations<5> for Member {
    type Data = Member;

    fn show(data: &Member, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let used = data.with_entry(|m| m.used)?;
        show_amounts(page, &used)
    }
}

/// `reserved`: what the member's started environment reserved from the
/// pool (nothing while it is not started), read-only.
#[vtable]
impl configfs::AttributeOperations<6> for Member {
    type Data = Member;

    fn show(data: &Member, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let reserved = data.with_entry(|m| m.reserved)?;
        show_amounts(page, &reserved)
    }
}

/// `rules`: the administrator's rules on shared objects, per user
/// (`shared.rs`): `PATH UID RIGHTS` or `PATH UID default`; reads list
/// them.
#[vtable]
impl configfs::AttributeOperations<3> for Registry {
    type Data = Registry;

    fn show(data: &Registry, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        shared::show_rules(&data.book, page)
    }

    fn store(data: &Registry, page: &[u8]) -> Result {
        shared::set_rule(&data.book, page)
    }
}

/// `public`: the names of the device's public folders, read-only.
#[vtable]
impl configfs::AttributeOperations<4> for Registry {
    type Data = Registry;

    fn show(data: &Registry, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let ledger = data.book.ledger.lock();
        shared::list(&ledger.public, page)
    }
}

/// `publish_public`: `1` lets the member, while it is an owner, publish
/// in the device's public folders; `0` (the default) does not.
#[vtable]
impl configfs::AttributeOperations<7> for Member {
    type Data = Member;

    fn show(data: &Member, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let on = data.with_entry(|m| m.publish_public)?;
        show(page, |w| writeln!(w, "{}", u8::from(on)))
    }

    fn store(data: &Member, page: &[u8]) -> Result {
        let on = match parse_u64(page)? {
            0 => false,
            1 => true,
            _ => return Err(EINVAL),
        };
        data.with_entry(|m| m.publish_public = on)
    }
}
