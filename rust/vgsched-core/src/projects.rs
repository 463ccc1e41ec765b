// SPDX-License-Identifier: GPL-2.0

//! Projects: budgets, member requests and charges, the access rules of
//! shared storage, and the rate limit of authorization attempts.
//!
//! A *project* has a budget per resource. Its *members* each have a role
//! and a *request* per resource, the most they may hold at once; the
//! requests of all members together must fit in the budget, so a request
//! that does not fit beside the others is refused (`EDQUOT`), and so is a
//! budget lowered below them. What a member's files create is *charged* to
//! it: past its request, `EDQUOT`; when the device's pool of that resource
//! is held by others, `ENOSPC` (or the caller waits). A member's *target*
//! is its request, the most it holds; *starting* its environment
//! reserves the whole target from the pool in one step
//! ([`admit_start`]), after which its charges within the target take
//! nothing more from the pool. These are pure functions over small
//! numbers; the module keeps the state and calls them under its own lock.
//! The commands that enrol the device's tiles into the pool are parsed
//! here too ([`ProviderCommand`]).
//!
//! Shared storage has three kinds of folder: the project's folders
//! (read-write for its members), one folder per member (read-write for its
//! owner, read-only for the other members) and public folders (read-only
//! for everyone; the project's owners publish there). A non-member never
//! learns what a project's private folders hold: `ENOENT`, as if the name
//! did not exist. [`access`] is the whole rule.

use super::topology::{
    within,
    ParamError, //
};

/// Resources a project budgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// Contexts its members' files hold.
    Contexts,
    /// Bytes of the buffer objects they hold.
    BoBytes,
    /// Tiles their unfinished jobs ask for, together.
    Tiles,
    /// Bytes of the buffer objects published in the project's folders.
    SharedBytes,
}

/// Number of [`Resource`]s.
pub const RESOURCES: usize = 4;

impl Resource {
    /// Every resource, in the order of [`Amounts`].
    pub const ALL: [Resource; RESOURCES] = [
        Resource::Contexts,
        Resource::BoBytes,
        Resource::Tiles,
        Resource::SharedBytes,
    ];

    /// Its name, as configfs attributes and log lines show it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Contexts => "contexts",
            Self::BoBytes => "bo_bytes",
            Self::Tiles => "tiles",
            Self::SharedBytes => "shared_bytes",
        }
    }

    /// Its index in [`Amounts`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// An amount of every resource.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Amounts(pub [u64; RESOURCES]);

impl Amounts {
    /// Nothing of anything.
    pub const ZERO: Amounts = Amounts([0; RESOURCES]);

    /// The amount of `r`.
    pub fn get(&self, r: Resource) -> u64 {
        self.0.get(r.index()).copied().unwrap_or(0)
    }

    /// Sets the amount of `r`.
    pub fn set(&mut self, r: Resource, v: u64) {
        if let Some(slot) = self.0.get_mut(r.index()) {
            *slot = v;
        }
    }

    /// The sum, saturating (a sum past `u64::MAX` fits no budget anyway).
    pub fn plus(&self, other: &Amounts) -> Amounts {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0.iter()) {
            *a = a.saturating_add(*b);
        }
        out
    }

    /// The difference, saturating at 0.
    pub fn minus(&self, other: &Amounts) -> Amounts {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0.iter()) {
            *a = a.saturating_sub(*b);
        }
        out
    }

    /// The first resource of which `self` has more than `limit`.
    pub fn first_over(&self, limit: &Amounts) -> Option<Resource> {
        Resource::ALL
            .into_iter()
            .find(|&r| self.get(r) > limit.get(r))
    }
}

/// Limits of `pool_contexts`.
pub const POOL_CONTEXTS: (u32, u32) = (1, 1_000_000);
/// Limits of `pool_bo_mib`.
pub const POOL_BO_MIB: (u32, u32) = (1, 1 << 20);

/// The device's pool for project members, from the module parameters
/// `pool_contexts` and `pool_bo_mib`; tiles and shared bytes are not
/// pooled (unlimited).
pub fn pool_from_values(contexts: u64, bo_mib: u64) -> Result<Amounts, ParamError> {
    let contexts = within("pool_contexts", contexts, POOL_CONTEXTS)?;
    let bo_mib = within("pool_bo_mib", bo_mib, POOL_BO_MIB)?;
    let mut pool = Amounts([u64::MAX; RESOURCES]);
    pool.set(Resource::Contexts, u64::from(contexts));
    pool.set(Resource::BoBytes, u64::from(bo_mib) << 20);
    Ok(pool)
}

/// Why a quota operation is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaError {
    /// Past the member's request, or requests past the budget (`EDQUOT`).
    OverQuota(Resource),
    /// Within quota, but the device's pool is held by others (`ENOSPC`).
    PoolBusy(Resource),
    /// A start the device's pool could never hold, whatever the others
    /// give back (`ENOSPC`, and no wait).
    PoolTooSmall(Resource),
    /// A start whose tiles the providers did not enrol for the member
    /// (`ENOSPC`; a waiting start waits for an enrolment).
    NotEnrolled,
}

/// A member's new request, beside the other members' requests (their sum),
/// within the project's budget: `Ok`, or the first resource that does not
/// fit ([`QuotaError::OverQuota`]).
pub fn admit_request(
    budget: &Amounts,
    others: &Amounts,
    request: &Amounts,
) -> Result<(), QuotaError> {
    match others.plus(request).first_over(budget) {
        Some(r) => Err(QuotaError::OverQuota(r)),
        None => Ok(()),
    }
}

/// A new budget for a project whose members request `requests` in all:
/// refused if it would fall below them.
pub fn admit_budget(budget: &Amounts, requests: &Amounts) -> Result<(), QuotaError> {
    match requests.first_over(budget) {
        Some(r) => Err(QuotaError::OverQuota(r)),
        None => Ok(()),
    }
}

/// Charging `amount` of `r` to a member that holds `used` of a `request`
/// and has `reserved` from the pool (its started environment; nothing
/// otherwise), on a device whose pool of `r` has `pool_free` left: past the
/// request [`QuotaError::OverQuota`], past the pool [`QuotaError::PoolBusy`].
/// Returns what the pool gives: only what the charge takes beyond the
/// reservation ([`pool_share`]), so a started member within its
/// reservation is never refused by the pool.
pub fn charge(
    request: &Amounts,
    used: &Amounts,
    reserved: &Amounts,
    r: Resource,
    amount: u64,
    pool_free: u64,
) -> Result<u64, QuotaError> {
    let Some(after) = used.get(r).checked_add(amount) else {
        return Err(QuotaError::OverQuota(r));
    };
    if after > request.get(r) {
        return Err(QuotaError::OverQuota(r));
    }
    let res = reserved.get(r);
    let taken = after.max(res) - used.get(r).max(res);
    if taken > pool_free {
        return Err(QuotaError::PoolBusy(r));
    }
    Ok(taken)
}

/// What the pool gets back when a member that holds `used` of a resource
/// and has `reserved` of it gives `amount` back: nothing within the
/// reservation.
pub fn uncharge(reserved: u64, used: u64, amount: u64) -> u64 {
    used.max(reserved) - used.saturating_sub(amount).max(reserved)
}

/// What a member takes from the device's pool: what its files hold, or,
/// while its environment is started, what it reserved where that is more.
pub fn pool_share(reserved: &Amounts, used: &Amounts) -> Amounts {
    let mut share = *used;
    for (s, r) in share.0.iter_mut().zip(reserved.0.iter()) {
        *s = (*s).max(*r);
    }
    share
}

/// Starting a member's environment: its `target` (its request) reserved
/// from the pool in one step, the member holding `used` already, on a
/// device whose pool is `pool` (of tiles, the device's: [`start_pool`])
/// with `pool_used` taken, of which the providers enrolled `enrolled`
/// tiles for the member. Returns what the pool gives (the target beyond
/// what the member holds), all or nothing: [`QuotaError::PoolTooSmall`]
/// for a resource the pool could never give (a waiting start would never
/// end), [`QuotaError::NotEnrolled`] for more tiles than the providers
/// enrolled for the member (an enrolment may change that),
/// [`QuotaError::PoolBusy`] for the first resource but tiles the pool
/// cannot give now. Tiles are counted here only against the enrolled
/// ones: which of them a start takes is a matter of names (the caller
/// reserves tiles no other environment reserved, [`TileTopology::reserve`],
/// busy if it cannot), and what others' jobs hold on them is the
/// placement's wait, not the pool's, so what other projects hold on their
/// own tiles never holds a start back.
///
/// [`TileTopology::reserve`]: crate::tiles::TileTopology::reserve
pub fn admit_start(
    target: &Amounts,
    used: &Amounts,
    pool: &Amounts,
    pool_used: &Amounts,
    enrolled: u64,
) -> Result<Amounts, QuotaError> {
    let reserved = reservation(target, pool);
    let take = pool_share(&reserved, used).minus(used);
    if let Some(r) = reserved.first_over(pool) {
        return Err(QuotaError::PoolTooSmall(r));
    }
    let mut limit = *pool;
    limit.set(Resource::Tiles, enrolled.min(pool.get(Resource::Tiles)));
    if reserved.get(Resource::Tiles) > limit.get(Resource::Tiles) {
        return Err(QuotaError::NotEnrolled);
    }
    let mut free = limit.minus(pool_used);
    free.set(Resource::Tiles, u64::MAX);
    match take.first_over(&free) {
        Some(r) => Err(QuotaError::PoolBusy(r)),
        None => Ok(take),
    }
}

/// What a start reserves of `target` from `pool`: nothing of a resource
/// the pool does not limit (`u64::MAX`: nothing to run out of, and a
/// reservation would only overflow the count), and at most the pool's
/// tiles (a member may queue jobs of more tiles than the device has; they
/// wait for idle tiles, and a start reserves them all).
pub fn reservation(target: &Amounts, pool: &Amounts) -> Amounts {
    let mut r = *target;
    for res in Resource::ALL {
        let limit = pool.get(res);
        let want = target.get(res);
        let kept = match (limit, res) {
            (u64::MAX, _) => 0,
            (limit, Resource::Tiles) => want.min(limit),
            _ => want,
        };
        r.set(res, kept);
    }
    r
}

/// The pool a start is admitted against: `pool` with the device's `tiles`.
/// Jobs' tiles are charged to members as they are submitted but not
/// refused by the pool (a job waits for idle tiles instead); a start
/// reserves tiles from the device's, and waits for the jobs that hold
/// them.
pub fn start_pool(pool: &Amounts, tiles: u32) -> Amounts {
    let mut p = *pool;
    p.set(Resource::Tiles, u64::from(tiles));
    p
}

/// Default bound of a uid in no project (not root), module parameter
/// `default_contexts`: contexts its files hold together on one device.
pub const DEFAULT_CONTEXTS: u32 = 1024;
/// Limits of `default_contexts` (the device holds at most 16 384).
pub const DEFAULT_CONTEXTS_LIMITS: (u32, u32) = (1, 16_384);
/// Default bound of a uid in no project, module parameter
/// `default_bo_mib`: MiB of buffer objects its files hold together.
pub const DEFAULT_BO_MIB: u32 = 1024;
/// Limits of `default_bo_mib` (up to 1 TiB).
pub const DEFAULT_BO_MIB_LIMITS: (u32, u32) = (1, 1 << 20);

/// What a uid in no project may hold, as a request: `contexts` contexts
/// and `bo_mib` MiB of buffer objects; tiles and shared storage are not
/// bounded (a uid in no project has no project storage to publish to).
pub fn default_bound(contexts: u32, bo_mib: u32) -> Amounts {
    let mut a = Amounts([u64::MAX; RESOURCES]);
    a.set(Resource::Contexts, u64::from(contexts));
    a.set(Resource::BoBytes, u64::from(bo_mib) << 20);
    a
}

/// Contexts of the device that neither project members nor uids outside
/// every project may take ([`DeviceContexts`]): root's, one file's worth
/// (`DRM_VGSCHED_MAX_CONTEXTS_PER_FILE`), so that an administrator can
/// always open a file and work on a device the others filled.
pub const ROOT_RESERVE_CONTEXTS: u64 = 64;

/// How the ledger shares the device's contexts (the engine's limit over
/// all files) between project members, uids outside every project
/// (*outsiders*) and root.
///
/// Members and outsiders together hold at most [`Self::charged`]: the
/// device's contexts but [`ROOT_RESERVE_CONTEXTS`], which stay root's.
/// Outsiders together hold at most [`Self::outsiders`]: what the members'
/// pool and root's reserve leave of the device, but at least half of it
/// (a pool made as large as the device must not lock out everyone else),
/// so never the whole device. Within that share each outsider's
/// namespace owner is bounded by the default bound
/// ([`default_bound`]), and the outsiders never take what members hold or
/// reserve: their charge is refused where it would pass [`Self::charged`]
/// beside the members' ([`Self::admit_outsiders`]). Members, in turn,
/// take the pool only from what outsiders leave ([`Self::members_taken`]),
/// so a started member's reservation (counted in what members hold) is
/// always there to create its contexts in, and root's reserve is never
/// taken by anyone else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceContexts {
    /// What members and outsiders may hold together.
    pub charged: u64,
    /// What outsiders may hold together.
    pub outsiders: u64,
}

impl DeviceContexts {
    /// The shares of a device of `device` contexts whose members' pool
    /// has `pool` contexts.
    pub fn new(device: u64, pool: u64) -> Self {
        let charged = device.saturating_sub(ROOT_RESERVE_CONTEXTS);
        let outsiders = charged.saturating_sub(pool).max(device / 2).min(charged);
        Self { charged, outsiders }
    }

    /// The members' `pool` as the device can hold it: of contexts, at most
    /// [`Self::charged`]; the other resources as they are.
    pub fn members_pool(&self, pool: &Amounts) -> Amounts {
        let mut p = *pool;
        let c = Resource::Contexts;
        p.set(c, pool.get(c).min(self.charged));
        p
    }

    /// What of [`Self::members_pool`] members cannot take now, members
    /// holding and reserving `pool_used` and outsiders holding `outsiders`
    /// contexts together: what members hold and reserve, and of contexts
    /// also the part of the pool that outsiders hold of the device (the
    /// pool's contexts are free only where the device has them free too).
    /// It is what [`admit_start`] and [`charge`] are given as taken.
    pub fn members_taken(&self, pool: &Amounts, pool_used: &Amounts, outsiders: u64) -> Amounts {
        let c = Resource::Contexts;
        let limit = self.members_pool(pool).get(c);
        let used = pool_used.get(c);
        let free = limit
            .saturating_sub(used)
            .min(self.charged.saturating_sub(used).saturating_sub(outsiders));
        let mut taken = *pool_used;
        taken.set(c, used.max(limit - free));
        taken
    }

    /// Whether outsiders holding `outsiders` contexts together may take
    /// `amount` more, members holding and reserving `pool_used`:
    /// [`QuotaError::PoolBusy`] past the outsiders' share, or past what
    /// the members leave of [`Self::charged`].
    pub fn admit_outsiders(
        &self,
        outsiders: u64,
        pool_used: u64,
        amount: u64,
    ) -> Result<(), QuotaError> {
        let after = outsiders.saturating_add(amount);
        if after > self.outsiders || after.saturating_add(pool_used) > self.charged {
            return Err(QuotaError::PoolBusy(Resource::Contexts));
        }
        Ok(())
    }
}

/// A member's role in its project.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Manages the project's storage: publishes to its public folders.
    Owner,
    /// Works in it.
    Member,
}

impl Role {
    /// The role of a configfs `role` value (`owner`, `member`, a trailing
    /// newline allowed); `None` for anything else.
    pub fn parse(text: &[u8]) -> Option<Role> {
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        match text {
            b"owner" => Some(Role::Owner),
            b"member" => Some(Role::Member),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Member => "member",
        }
    }
}

/// The kinds of folder of a project's shared storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Folder {
    /// A project folder (models, data sets): read-write for members.
    Project,
    /// A member's own folder: read-write for it, read-only for the others.
    Member,
    /// A public folder: read-only for everyone.
    Public,
}

/// What a caller does with a shared object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Opens it read-only.
    OpenRead,
    /// Opens it read-write.
    OpenWrite,
    /// Maps it with `PROT_WRITE` (needs a read-write handle).
    MapWrite,
    /// Binds it writable in a job (needs a read-write handle).
    BindWrite,
    /// Publishes an object under a name in the folder.
    Publish,
    /// Removes a name from the folder.
    Unpublish,
}

impl Op {
    /// Every operation.
    pub const ALL: [Op; 6] = [
        Op::OpenRead,
        Op::OpenWrite,
        Op::MapWrite,
        Op::BindWrite,
        Op::Publish,
        Op::Unpublish,
    ];

    /// It changes the folder or the object.
    pub fn writes(self) -> bool {
        !matches!(self, Op::OpenRead)
    }
}

/// Who asks, as the rules see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    /// Is root (uid 0 in the initial user namespace): may do everything.
    pub admin: bool,
    /// Its role in the folder's project, if it is a member of it.
    pub role: Option<Role>,
    /// For a member folder: it is the member the folder belongs to.
    pub owns_folder: bool,
}

/// Why an access is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// The caller may know the name but not do this (`EACCES`).
    Denied,
    /// The caller may not know the name exists (`ENOENT`).
    Hidden,
}

/// Whether `caller` may do `op` in a folder of kind `folder`:
///
/// - an administrator may do everything;
/// - a non-member sees only public folders, read-only; a project's or a
///   member's folder is hidden from it;
/// - a project folder is read-write for every member;
/// - a member folder is read-write for its owner, read-only for the other
///   members;
/// - a public folder is read-only for everyone; the project's owners
///   publish and unpublish there.
pub fn access(caller: Caller, folder: Folder, op: Op) -> Result<(), AccessError> {
    if caller.admin {
        return Ok(());
    }
    let Some(role) = caller.role else {
        return match folder {
            Folder::Public if !op.writes() => Ok(()),
            Folder::Public => Err(AccessError::Denied),
            Folder::Project | Folder::Member => Err(AccessError::Hidden),
        };
    };
    let allowed = match folder {
        Folder::Project => true,
        Folder::Member => caller.owns_folder || !op.writes(),
        Folder::Public => match op {
            Op::OpenRead => true,
            Op::Publish | Op::Unpublish => role == Role::Owner,
            Op::OpenWrite | Op::MapWrite | Op::BindWrite => false,
        },
    };
    match allowed {
        true => Ok(()),
        false => Err(AccessError::Denied),
    }
}

/// What the administrator's rule for one user on one shared object
/// allows, three separate rights: reading it, writing it (which includes
/// reading), and downloading it (exporting it out of the device as a
/// dma-buf, `PRIME_HANDLE_TO_FD`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rights {
    /// Open it read-only.
    pub read: bool,
    /// Open it read-write, map it for writing, bind it writable.
    pub write: bool,
    /// Export it out of the device.
    pub download: bool,
}

impl Rights {
    /// Parses rights written as letters of `rwd`, each at most once, in
    /// any order (`w` gives `r` too), or `-` for none; `None` otherwise.
    pub fn parse(word: &[u8]) -> Option<Rights> {
        if word == b"-" {
            return Some(Rights::default());
        }
        if word.is_empty() {
            return None;
        }
        let mut r = Rights::default();
        for &c in word {
            let right = match c {
                b'r' => &mut r.read,
                b'w' => &mut r.write,
                b'd' => &mut r.download,
                _ => return None,
            };
            if *right {
                return None;
            }
            *right = true;
        }
        r.read |= r.write;
        Some(r)
    }

    /// The rights as three letters, `-` for each one missing (`rw-`).
    pub fn letters(self) -> [u8; 3] {
        let pick = |on: bool, c: u8| if on { c } else { b'-' };
        [
            pick(self.read, b'r'),
            pick(self.write, b'w'),
            pick(self.download, b'd'),
        ]
    }
}

/// [`access`] for an object the administrator gave `caller` a rule on:
/// the rule decides what the caller may do with the object itself
/// (open it either way, map it for writing, bind it writable), in place
/// of the folder's matrix; what a caller may not see stays hidden, and
/// publishing and unpublishing stay the folder's.
pub fn access_by_rule(
    caller: Caller,
    folder: Folder,
    op: Op,
    rule: Option<Rights>,
) -> Result<(), AccessError> {
    let by_folder = access(caller, folder, op);
    let Some(rights) = rule else {
        return by_folder;
    };
    if caller.admin || by_folder == Err(AccessError::Hidden) {
        return by_folder;
    }
    let allowed = match op {
        Op::Publish | Op::Unpublish => return by_folder,
        Op::OpenRead => rights.read,
        Op::OpenWrite | Op::MapWrite | Op::BindWrite => rights.write,
    };
    match allowed {
        true => Ok(()),
        false => Err(AccessError::Denied),
    }
}

/// Whether a holder may download (export) an object: as its rule says if
/// the administrator gave it one, else if it may write the object (a
/// dma-buf gives its importers the pages).
pub fn may_download(rule: Option<Rights>, writable: bool) -> bool {
    rule.map_or(writable, |r| r.download)
}

/// A shared object as the `rules` attribute names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RulePath<'a> {
    /// Its project; `None` for the device's public folders.
    pub project: Option<&'a [u8]>,
    /// The kind of its folder.
    pub kind: Folder,
    /// The folder's name (`None` for a member folder).
    pub folder: Option<&'a [u8]>,
    /// The member of a member folder, else 0.
    pub member_uid: u32,
    /// The object's name.
    pub name: &'a [u8],
}

impl<'a> RulePath<'a> {
    /// `PROJECT/project/FOLDER/NAME`, `PROJECT/member/UID/NAME`,
    /// `PROJECT/public/FOLDER/NAME` or, for the device's public folders,
    /// `public/FOLDER/NAME`; every name valid.
    pub fn parse(text: &'a [u8]) -> Option<Self> {
        let mut parts = text.split(|&b| b == b'/');
        let (a, b, c) = (parts.next()?, parts.next()?, parts.next()?);
        let name = |n: &'a [u8]| valid_name(n).then_some(n);
        let path = match parts.next() {
            None if a == b"public" => Self {
                project: None,
                kind: Folder::Public,
                folder: Some(name(b)?),
                member_uid: 0,
                name: name(c)?,
            },
            None => return None,
            Some(d) => {
                let (kind, folder, member_uid) = match b {
                    b"project" => (Folder::Project, Some(name(c)?), 0),
                    b"public" => (Folder::Public, Some(name(c)?), 0),
                    b"member" => (Folder::Member, None, parse_u32(c)?),
                    _ => return None,
                };
                Self {
                    project: Some(name(a)?),
                    kind,
                    folder,
                    member_uid,
                    name: name(d)?,
                }
            }
        };
        parts.next().is_none().then_some(path)
    }
}

/// A command of the `rules` attribute: `PATH UID RIGHTS` gives user `UID`
/// the rights on the object at `PATH`; `PATH UID default` removes its
/// rule (the folder's matrix applies again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleCommand<'a> {
    /// The object.
    pub path: RulePath<'a>,
    /// The user.
    pub uid: u32,
    /// Its rights; `None` to remove its rule.
    pub rights: Option<Rights>,
}

impl<'a> RuleCommand<'a> {
    /// Parses `line` (one trailing newline allowed, single spaces);
    /// `None` for anything malformed.
    pub fn parse(line: &'a [u8]) -> Option<Self> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let mut words = line.split(|&b| b == b' ');
        let path = RulePath::parse(words.next()?)?;
        let uid = parse_u32(words.next()?)?;
        let rights = match words.next()? {
            b"default" => None,
            w => Some(Rights::parse(w)?),
        };
        words.next().is_none().then_some(Self { path, uid, rights })
    }
}

/// Failed authorization attempts a user may make in a burst.
pub const AUTH_BURST: u32 = 3;
/// Modeled time after which a failed attempt is forgiven, ns.
pub const AUTH_REFILL_NS: u64 = 1_000_000_000;

/// The rate limit of failed authorization attempts: a burst of
/// [`AUTH_BURST`], then one per [`AUTH_REFILL_NS`]. A limited attempt is
/// refused before the code is even compared.
///
/// # Invariants
///
/// `tokens <= AUTH_BURST`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptLimiter {
    tokens: u32,
    at_ns: u64,
}

impl AttemptLimiter {
    /// A full burst at `now_ns`.
    pub fn new(now_ns: u64) -> Self {
        Self {
            tokens: AUTH_BURST,
            at_ns: now_ns,
        }
    }

    /// Refills what time has earned.
    fn refill(&mut self, now_ns: u64) {
        let earned = now_ns.saturating_sub(self.at_ns) / AUTH_REFILL_NS;
        if earned > 0 {
            let earned = u32::try_from(earned).unwrap_or(u32::MAX);
            self.tokens = self.tokens.saturating_add(earned).min(AUTH_BURST);
            self.at_ns = self
                .at_ns
                .saturating_add(u64::from(earned).saturating_mul(AUTH_REFILL_NS));
            if self.tokens == AUTH_BURST {
                self.at_ns = now_ns;
            }
        }
    }

    /// Whether an attempt may be checked at `now_ns`.
    pub fn may_try(&mut self, now_ns: u64) -> bool {
        self.refill(now_ns);
        self.tokens > 0
    }

    /// An attempt failed at `now_ns`: it costs a token.
    pub fn failed(&mut self, now_ns: u64) {
        self.refill(now_ns);
        if self.tokens == AUTH_BURST {
            self.at_ns = now_ns;
        }
        self.tokens = self.tokens.saturating_sub(1);
    }

    /// Attempts left at `now_ns`: a full burst means the limiter is as
    /// good as new.
    pub fn tokens(&mut self, now_ns: u64) -> u32 {
        self.refill(now_ns);
        self.tokens
    }
}

/// Users whose failed attempts [`AttemptLimits`] keeps at once.
pub const AUTH_USERS: usize = 64;

/// The rate limits of failed authorization attempts, one per user (uid):
/// opening another file does not start a user's burst again.
///
/// A user gets an entry at its first failure. When all [`AUTH_USERS`]
/// entries are in use, a new one replaces an entry that is as good as new
/// (a full burst), else the least limited one: only that many users
/// failing at once could free one of them early.
///
/// # Invariants
///
/// `used <= AUTH_USERS`; the first `used` entries are distinct users.
#[derive(Clone, Copy, Debug)]
pub struct AttemptLimits {
    entries: [(u32, AttemptLimiter); AUTH_USERS],
    used: usize,
}

impl Default for AttemptLimits {
    fn default() -> Self {
        Self::new()
    }
}

impl AttemptLimits {
    /// No failures yet.
    pub const fn new() -> Self {
        Self {
            entries: [(
                0,
                AttemptLimiter {
                    tokens: AUTH_BURST,
                    at_ns: 0,
                },
            ); AUTH_USERS],
            used: 0,
        }
    }

    fn find(&mut self, uid: u32) -> Option<&mut AttemptLimiter> {
        self.entries
            .iter_mut()
            .take(self.used)
            .find(|(u, _)| *u == uid)
            .map(|(_, l)| l)
    }

    /// Whether `uid` may have an attempt checked at `now_ns`.
    pub fn may_try(&mut self, uid: u32, now_ns: u64) -> bool {
        self.find(uid).is_none_or(|l| l.may_try(now_ns))
    }

    /// An attempt of `uid` failed at `now_ns`.
    pub fn failed(&mut self, uid: u32, now_ns: u64) {
        if let Some(l) = self.find(uid) {
            l.failed(now_ns);
            return;
        }
        let slot = if self.used < AUTH_USERS {
            self.used += 1;
            self.used - 1
        } else {
            // The entry with the most attempts left (a full burst first).
            let mut best = 0;
            let mut most = 0;
            for (i, (_, l)) in self.entries.iter_mut().enumerate() {
                let t = l.tokens(now_ns);
                if t > most {
                    (best, most) = (i, t);
                }
            }
            best
        };
        let mut l = AttemptLimiter::new(now_ns);
        l.failed(now_ns);
        if let Some(e) = self.entries.get_mut(slot) {
            *e = (uid, l);
        }
    }
}

/// Bytes of a name in shared storage, its terminating NUL included.
pub const NAME_BYTES: usize = 32;

/// The name held in a NUL-terminated field of [`NAME_BYTES`]: 1 to 31
/// characters of `[A-Za-z0-9._-]`, not starting with a dot (no `.`, `..`
/// or hidden names); `None` for anything else, including bytes after the
/// NUL.
pub fn parse_name(field: &[u8; NAME_BYTES]) -> Option<&[u8]> {
    let len = field.iter().position(|&b| b == 0)?;
    let (name, rest) = field.split_at(len);
    (valid_name(name) && rest.iter().all(|&b| b == 0)).then_some(name)
}

/// Whether `name` is a valid name of [`parse_name`]'s rule.
pub fn valid_name(name: &[u8]) -> bool {
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    name.len() < NAME_BYTES && name.first().is_some_and(|&b| b != b'.') && name.iter().all(allowed)
}

/// Bytes of an access code (`DRM_VGSCHED_CODE_BYTES`).
pub const CODE_BYTES: usize = 16;

/// Limits of the module parameter `tile_enrolment`.
pub const TILE_ENROLMENT: (u32, u32) = (0, 1);

/// Whether the device's tiles start outside the pool, from the module
/// parameter `tile_enrolment`: 0, every tile serves everyone from load
/// (until revoked); 1, no tile serves anyone until its code is entered.
pub fn tiles_start_outside(value: u64) -> Result<bool, ParamError> {
    Ok(within("tile_enrolment", value, TILE_ENROLMENT)? == 1)
}

/// Who provides GPUs to the pool: a node of the device's topology (the
/// pooling document's physical machine, all its tiles under one code), or
/// one tile of it (a part of a machine, split and isolated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderId {
    /// Node `N`: every tile of the node.
    Node(u32),
    /// Tile `T` alone.
    Tile(u32),
}

/// A command of the `providers` attribute, which enrols the device's
/// providers (its nodes, or single tiles) into the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderCommand<'a> {
    /// `code node N` or `code T`: a new enrolment code for the provider,
    /// replacing any, shown once; what the provider hands the pool's
    /// administrator.
    Code {
        /// The provider.
        who: ProviderId,
    },
    /// `enrol node N CODE [PROJECT]` or `enrol T CODE [PROJECT]`: enters
    /// the provider's code (32 hex digits): its tiles join the pool for
    /// `PROJECT`'s members, or for everyone without one.
    Enrol {
        /// The provider.
        who: ProviderId,
        /// The code entered.
        code: [u8; CODE_BYTES],
        /// The project it serves, a valid name; `None`: every user.
        project: Option<&'a [u8]>,
    },
    /// `revoke node N` or `revoke T`: the provider's tiles leave the pool
    /// (no new job may use them; the jobs accepted before run on) and its
    /// code is void.
    Revoke {
        /// The provider.
        who: ProviderId,
    },
}

impl<'a> ProviderCommand<'a> {
    /// Parses `line` (one trailing newline allowed; words separated by
    /// single spaces) for a device of `nodes` nodes of `tiles` tiles in
    /// all; `None` for anything malformed: an unknown word, a node or tile
    /// past the device, a code that is not 32 hex digits, a project that
    /// is not a valid name, extra words.
    pub fn parse(line: &'a [u8], nodes: u32, tiles: u32) -> Option<Self> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let mut words = line.split(|&b| b == b' ').peekable();
        let verb = words.next()?;
        let who = match words.next_if(|&w| w == b"node") {
            Some(_) => ProviderId::Node(parse_u32(words.next()?).filter(|&n| n < nodes)?),
            None => ProviderId::Tile(parse_u32(words.next()?).filter(|&t| t < tiles)?),
        };
        let command = match verb {
            b"code" => Self::Code { who },
            b"revoke" => Self::Revoke { who },
            b"enrol" => {
                let code = parse_code(words.next()?)?;
                let project = match words.next() {
                    Some(name) if valid_name(name) => Some(name),
                    Some(_) => return None,
                    None => None,
                };
                Self::Enrol { who, code, project }
            }
            _ => return None,
        };
        words.next().is_none().then_some(command)
    }
}

/// A number as configfs takes it: decimal or `0x` hexadecimal, one
/// trailing newline allowed; `None` for anything else, a negative number
/// or one past `u64`.
pub fn parse_number(text: &[u8]) -> Option<u64> {
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let (digits, radix) = match text.strip_prefix(b"0x") {
        Some(hex) => (hex, 16),
        None => (text, 10),
    };
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |v, &c| {
        let d = (c as char).to_digit(radix)?;
        v.checked_mul(u64::from(radix))?.checked_add(u64::from(d))
    })
}

/// A [`parse_number`] that fits in a `u32` (a tile, a uid).
fn parse_u32(word: &[u8]) -> Option<u32> {
    u32::try_from(parse_number(word)?).ok()
}

/// A code written as 32 hex digits (either case).
pub fn parse_code(word: &[u8]) -> Option<[u8; CODE_BYTES]> {
    if word.len() != 2 * CODE_BYTES {
        return None;
    }
    let mut code = [0u8; CODE_BYTES];
    let digit = |i: usize| (*word.get(i)? as char).to_digit(16);
    for (i, byte) in code.iter_mut().enumerate() {
        *byte = (digit(2 * i)? << 4 | digit(2 * i + 1)?) as u8;
    }
    Some(code)
}

/// How one open file holds one buffer object: its handles to it, the
/// handles a shared-storage open is about to make, and whether the file
/// may write the object (mmap with `PROT_WRITE`, bind it writable).
///
/// A file's access is the best its handles were given: a handle made by
/// creating the object or importing it is read-write; one made by a
/// shared-storage open has the mode the folder's rules granted. A shared
/// object gets no handle any other way ([`Holding::first`]).
///
/// # Invariants
///
/// `handles + pending > 0` while the holding exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Holding {
    handles: u32,
    pending: u32,
    writable: bool,
    /// The write access was given by making the object or by its folder's
    /// matrix, not only by an administrator's rule (which may be taken
    /// back: [`may_write_now`]).
    folder_writable: bool,
}

impl Holding {
    /// The first handle of a file that held nothing of the object, made
    /// outside shared storage: read-write, or refused for a shared object
    /// (its handles come from shared-storage opens).
    pub fn first(shared: bool) -> Result<Holding, AccessError> {
        match shared {
            true => Err(AccessError::Denied),
            false => Ok(Holding {
                handles: 1,
                pending: 0,
                writable: true,
                folder_writable: true,
            }),
        }
    }

    /// A shared-storage open granted `writable` to a file that held
    /// nothing of the object; its handle is about to be made. `by_rule`:
    /// only an administrator's rule gave the write access.
    pub fn granted(writable: bool, by_rule: bool) -> Holding {
        let mut h = Holding {
            handles: 0,
            pending: 0,
            writable: false,
            folder_writable: false,
        };
        h.grant(writable, by_rule);
        h
    }

    /// A shared-storage open granted `writable` (by a rule alone if
    /// `by_rule`) to a file that holds the object already: the file keeps
    /// the better access.
    pub fn grant(&mut self, writable: bool, by_rule: bool) {
        self.pending = self.pending.saturating_add(1);
        self.writable |= writable;
        self.folder_writable |= writable && !by_rule;
    }

    /// A handle was made (a granted one, or another of a file that holds
    /// the object already).
    pub fn opened(&mut self) {
        self.pending = self.pending.saturating_sub(1);
        self.handles = self.handles.saturating_add(1);
    }

    /// A granted handle was not made after all; `true` if the file holds
    /// nothing of the object any more.
    pub fn ungrant(&mut self) -> bool {
        self.pending = self.pending.saturating_sub(1);
        self.handles == 0 && self.pending == 0
    }

    /// A handle was closed; `true` if the file holds nothing of the object
    /// any more.
    pub fn closed(&mut self) -> bool {
        self.handles = self.handles.saturating_sub(1);
        self.handles == 0 && self.pending == 0
    }

    /// The file's handles were given write access, by whatever means.
    pub fn writable(&self) -> bool {
        self.writable
    }

    /// Write access given by making the object or by its folder's matrix.
    pub fn folder_writable(&self) -> bool {
        self.folder_writable
    }
}

/// Whether a file holding an object as `holding` may write it now, the
/// administrator's rule for its user being `rule`: as the rule says if
/// there is one (and a handle was given write access); else only if its
/// write access did not come from a rule, which may have been taken back
/// since.
pub fn may_write_now(holding: &Holding, rule: Option<Rights>) -> bool {
    match rule {
        Some(r) => holding.writable && r.write,
        None => holding.folder_writable,
    }
}

/// Whether such a file may publish the object under another name: only
/// with write access of its own (not a rule's, which binds this object and
/// user only), and no rule against writing.
pub fn may_republish(holding: &Holding, rule: Option<Rights>) -> bool {
    holding.folder_writable && rule.is_none_or(|r| r.write)
}

/// The cases KUnit runs too: the access matrix at its corners and the
/// quota arithmetic; `Err(name)` names the first that fails.
pub fn cases() -> Result<(), &'static str> {
    let member = |role, owns_folder| Caller {
        admin: false,
        role: Some(role),
        owns_folder,
    };
    let outsider = Caller {
        admin: false,
        role: None,
        owns_folder: false,
    };
    let admin = Caller {
        admin: true,
        role: None,
        owns_folder: false,
    };
    let budget = Amounts([4, 1 << 20, 2, 0]);
    let others = Amounts([3, 1 << 19, 1, 0]);
    let none = Amounts::ZERO;
    let mut limiter = AttemptLimiter::new(0);
    let mut name = [0u8; NAME_BYTES];
    name[..5].copy_from_slice(b"model");
    let mut holding = Holding::granted(false, false);
    holding.opened();
    let checks: [(&'static str, bool); 16] = [
        (
            "project folders are read-write for members",
            access(member(Role::Member, false), Folder::Project, Op::MapWrite).is_ok(),
        ),
        (
            "another member's folder is read-only",
            access(member(Role::Owner, false), Folder::Member, Op::BindWrite)
                == Err(AccessError::Denied)
                && access(member(Role::Member, false), Folder::Member, Op::OpenRead).is_ok(),
        ),
        (
            "one's own folder is read-write",
            access(member(Role::Member, true), Folder::Member, Op::Publish).is_ok(),
        ),
        (
            "a non-member does not see private folders",
            access(outsider, Folder::Member, Op::OpenRead) == Err(AccessError::Hidden),
        ),
        (
            "public folders are read-only, even for owners",
            access(outsider, Folder::Public, Op::OpenRead).is_ok()
                && access(member(Role::Owner, false), Folder::Public, Op::OpenWrite)
                    == Err(AccessError::Denied),
        ),
        (
            "owners publish in public folders, members do not",
            access(member(Role::Owner, false), Folder::Public, Op::Publish).is_ok()
                && access(member(Role::Member, false), Folder::Public, Op::Publish)
                    == Err(AccessError::Denied),
        ),
        (
            "an administrator may do everything",
            access(admin, Folder::Member, Op::Unpublish).is_ok(),
        ),
        (
            "a request that fits beside the others",
            admit_request(&budget, &others, &Amounts([1, 1 << 19, 1, 0])).is_ok(),
        ),
        (
            "a request past the budget names its resource",
            admit_request(&budget, &others, &Amounts([1, 1 << 19, 2, 0]))
                == Err(QuotaError::OverQuota(Resource::Tiles)),
        ),
        (
            "a budget below the requests is refused",
            admit_budget(&Amounts([2, 1 << 20, 2, 0]), &others)
                == Err(QuotaError::OverQuota(Resource::Contexts)),
        ),
        (
            "a start takes its whole target from the pool, or nothing",
            admit_start(&budget, &none, &budget, &others, u64::MAX)
                == Err(QuotaError::PoolBusy(Resource::Contexts))
                && admit_start(&others, &none, &budget, &none, u64::MAX) == Ok(others)
                && charge(&budget, &others, &budget, Resource::Contexts, 1, 0) == Ok(0),
        ),
        (
            "charges stop at the request, then at the pool",
            charge(&budget, &others, &none, Resource::Contexts, 2, 10)
                == Err(QuotaError::OverQuota(Resource::Contexts))
                && charge(&budget, &others, &none, Resource::Contexts, 1, 0)
                    == Err(QuotaError::PoolBusy(Resource::Contexts)),
        ),
        ("three failed attempts, then a wait", {
            let mut ok = true;
            for _ in 0..AUTH_BURST {
                ok &= limiter.may_try(0);
                limiter.failed(0);
            }
            ok && !limiter.may_try(AUTH_REFILL_NS - 1) && limiter.may_try(AUTH_REFILL_NS)
        }),
        (
            "shared names are plain words",
            parse_name(&name) == Some(&b"model"[..]) && parse_name(&[0; NAME_BYTES]).is_none(),
        ),
        (
            "a shared object gets handles only from shared storage",
            Holding::first(true) == Err(AccessError::Denied)
                && Holding::first(false).is_ok_and(|h| h.writable()),
        ),
        ("a read-only open stays read-only until its last handle", {
            let read_only = !holding.writable();
            holding.grant(true, false);
            holding.opened();
            read_only && holding.writable() && !holding.closed() && holding.closed()
        }),
    ];
    super::device_memory::first_failing(&checks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kunit_cases() {
        assert_eq!(cases(), Ok(()));
    }

    /// A user's failures count across its files; users are limited apart;
    /// a full table gives a new user the entry of one as good as new.
    #[test]
    fn attempt_limits_per_user() {
        let mut a = AttemptLimits::new();
        for _ in 0..AUTH_BURST {
            assert!(a.may_try(7, 0));
            a.failed(7, 0);
        }
        assert!(!a.may_try(7, 10));
        assert!(a.may_try(8, 10), "another user is not limited");
        assert!(a.may_try(7, AUTH_REFILL_NS));
        // Fill the table with users at their limit, one of them rested.
        let mut b = AttemptLimits::new();
        for uid in 0..AUTH_USERS as u32 {
            for _ in 0..AUTH_BURST {
                b.failed(uid, 0);
            }
        }
        b.failed(100, 0);
        for uid in 0..AUTH_USERS as u32 {
            assert!(!b.may_try(uid, 1) || uid == 0, "uid {uid}");
        }
        // Now uid 5 alone has rested: a newcomer takes its entry.
        let mut c = AttemptLimits::new();
        for uid in 0..AUTH_USERS as u32 {
            let n = if uid == 5 { 1 } else { AUTH_BURST };
            for _ in 0..n {
                c.failed(uid, if uid == 5 { 0 } else { 5 * AUTH_REFILL_NS });
            }
        }
        c.failed(200, 5 * AUTH_REFILL_NS);
        assert!(!c.may_try(1, 5 * AUTH_REFILL_NS + 1));
        assert!(c.may_try(200, 5 * AUTH_REFILL_NS + 1));
        assert!(c.may_try(5, 5 * AUTH_REFILL_NS + 1));
        for _ in 1..AUTH_BURST {
            c.failed(200, 5 * AUTH_REFILL_NS + 1);
        }
        assert!(!c.may_try(200, 5 * AUTH_REFILL_NS + 2));
    }

    fn field(text: &[u8]) -> [u8; NAME_BYTES] {
        let mut f = [0u8; NAME_BYTES];
        f[..text.len()].copy_from_slice(text);
        f
    }

    #[test]
    fn names() {
        for good in [&b"a"[..], b"model-v2.bin", b"A_b.c-9", &[b'x'; 31]] {
            assert_eq!(parse_name(&field(good)), Some(good), "{good:?}");
        }
        for bad in [
            &b""[..],
            b".",
            b"..",
            b".hidden",
            b"a/b",
            b"a b",
            b"caf\xc3\xa9",
        ] {
            assert_eq!(parse_name(&field(bad)), None, "{bad:?}");
        }
        // No NUL at all, or bytes after it.
        assert_eq!(parse_name(&[b'x'; NAME_BYTES]), None);
        let mut trailing = field(b"ok");
        trailing[5] = b'x';
        assert_eq!(parse_name(&trailing), None);
    }

    /// Every sequence of up to six steps on one file's holding of one
    /// object: the file may write exactly when some grant or outside
    /// handle made while it held the object was writable, and the holding
    /// ends exactly when its handles and grants are all gone.
    #[test]
    fn holdings() {
        #[derive(Clone, Copy, Debug)]
        enum Step {
            Outside,
            Grant(bool),
            Open,
            Ungrant,
            Close,
        }
        let steps = [
            Step::Outside,
            Step::Grant(false),
            Step::Grant(true),
            Step::Open,
            Step::Ungrant,
            Step::Close,
        ];
        for shared in [false, true] {
            for n in 0..=6u32 {
                for code in 0..steps.len().pow(n) {
                    let mut seq = code;
                    // Model: handles, pending grants, best access.
                    let (mut handles, mut pending, mut best) = (0u32, 0u32, false);
                    let mut h: Option<Holding> = None;
                    for _ in 0..n {
                        let step = steps[seq % steps.len()];
                        seq /= steps.len();
                        match (step, h.as_mut()) {
                            (Step::Outside, None) => {
                                h = Holding::first(shared).ok();
                                if !shared {
                                    (handles, best) = (1, true);
                                }
                            }
                            (Step::Outside | Step::Open, Some(x)) => {
                                x.opened();
                                handles += 1;
                                pending = pending.saturating_sub(1);
                            }
                            (Step::Grant(w), None) => {
                                h = Some(Holding::granted(w, false));
                                (pending, best) = (1, w);
                            }
                            (Step::Grant(w), Some(x)) => {
                                x.grant(w, false);
                                pending += 1;
                                best |= w;
                            }
                            (Step::Ungrant, Some(x)) if pending > 0 => {
                                pending -= 1;
                                let gone = x.ungrant();
                                assert_eq!(gone, handles == 0 && pending == 0);
                                if gone {
                                    h = None;
                                }
                            }
                            (Step::Close, Some(x)) if handles > 0 => {
                                handles -= 1;
                                let gone = x.closed();
                                assert_eq!(gone, handles == 0 && pending == 0);
                                if gone {
                                    h = None;
                                }
                            }
                            _ => {}
                        }
                        if h.is_none() {
                            (handles, pending, best) = (0, 0, false);
                        }
                        assert_eq!(h.is_some_and(|x| x.writable()), best);
                    }
                }
            }
        }
    }

    /// Every caller, folder kind and operation: the documented matrix.
    #[test]
    fn the_access_matrix() {
        use AccessError::*;
        let ok = Ok(());
        for admin in [false, true] {
            for role in [None, Some(Role::Owner), Some(Role::Member)] {
                for owns_folder in [false, true] {
                    if owns_folder && role.is_none() {
                        continue;
                    }
                    let caller = Caller {
                        admin,
                        role,
                        owns_folder,
                    };
                    for folder in [Folder::Project, Folder::Member, Folder::Public] {
                        for op in Op::ALL {
                            let want = if admin {
                                ok
                            } else {
                                match (role, folder) {
                                    (None, Folder::Public) if op == Op::OpenRead => ok,
                                    (None, Folder::Public) => Err(Denied),
                                    (None, _) => Err(Hidden),
                                    (Some(_), Folder::Project) => ok,
                                    (Some(_), Folder::Member) if owns_folder => ok,
                                    (Some(_), Folder::Member) if op == Op::OpenRead => ok,
                                    (Some(_), Folder::Member) => Err(Denied),
                                    (Some(_), Folder::Public) if op == Op::OpenRead => ok,
                                    (Some(Role::Owner), Folder::Public)
                                        if matches!(op, Op::Publish | Op::Unpublish) =>
                                    {
                                        ok
                                    }
                                    (Some(_), Folder::Public) => Err(Denied),
                                }
                            };
                            assert_eq!(
                                access(caller, folder, op),
                                want,
                                "{caller:?} {folder:?} {op:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Requests and budgets over a small space, against the definition.
    #[test]
    fn requests_fit_exactly_when_the_sum_fits() {
        for b in 0..6u64 {
            for o in 0..6u64 {
                for q in 0..6u64 {
                    let budget = Amounts([b, 5, 5, 5]);
                    let others = Amounts([o, 0, 0, 0]);
                    let request = Amounts([q, 0, 0, 0]);
                    let fits = o + q <= b;
                    assert_eq!(
                        admit_request(&budget, &others, &request).is_ok(),
                        fits,
                        "{b} {o} {q}"
                    );
                    assert_eq!(admit_budget(&budget, &others.plus(&request)).is_ok(), fits);
                }
            }
        }
        // Overflowing sums fit no budget.
        let huge = Amounts([u64::MAX, 0, 0, 0]);
        assert!(admit_request(&huge, &huge, &Amounts([1, 0, 0, 0])).is_ok());
        assert_eq!(
            admit_request(&Amounts([u64::MAX - 1, 0, 0, 0]), &huge, &Amounts::ZERO),
            Err(QuotaError::OverQuota(Resource::Contexts))
        );
    }

    #[test]
    fn charges_against_request_and_pool() {
        for req in 0..5u64 {
            for used in 0..5u64 {
                for amount in 0..5u64 {
                    for pool in 0..5u64 {
                        let r = charge(
                            &Amounts([0, req, 0, 0]),
                            &Amounts([0, used, 0, 0]),
                            &Amounts::ZERO,
                            Resource::BoBytes,
                            amount,
                            pool,
                        );
                        let want = if used + amount > req {
                            Err(QuotaError::OverQuota(Resource::BoBytes))
                        } else if amount > pool {
                            Err(QuotaError::PoolBusy(Resource::BoBytes))
                        } else {
                            Ok(amount)
                        };
                        assert_eq!(r, want);
                    }
                }
            }
        }
        assert_eq!(
            charge(
                &Amounts([u64::MAX; 4]),
                &Amounts([u64::MAX; 4]),
                &Amounts::ZERO,
                Resource::Tiles,
                1,
                1
            ),
            Err(QuotaError::OverQuota(Resource::Tiles))
        );
    }

    #[test]
    fn pools_are_checked() {
        let pool = pool_from_values(3, 2).unwrap();
        assert_eq!(pool.get(Resource::Contexts), 3);
        assert_eq!(pool.get(Resource::BoBytes), 2 << 20);
        assert_eq!(pool.get(Resource::Tiles), u64::MAX);
        assert_eq!(pool_from_values(0, 1).unwrap_err().field, "pool_contexts");
        assert_eq!(
            pool_from_values(1, (1 << 20) + 1).unwrap_err().field,
            "pool_bo_mib"
        );
    }

    #[test]
    fn roles_parse_as_configfs_writes_them() {
        assert_eq!(Role::parse(b"owner\n"), Some(Role::Owner));
        assert_eq!(Role::parse(b"member"), Some(Role::Member));
        for bad in [&b""[..], b"Owner", b"owner\n\n", b"admin", b" member"] {
            assert_eq!(Role::parse(bad), None);
        }
        for r in [Role::Owner, Role::Member] {
            assert_eq!(Role::parse(r.name().as_bytes()), Some(r));
        }
    }

    #[test]
    fn failed_attempts_are_limited() {
        let s = AUTH_REFILL_NS;
        let mut l = AttemptLimiter::new(0);
        for _ in 0..AUTH_BURST {
            assert!(l.may_try(10));
            l.failed(10);
        }
        assert!(!l.may_try(10 + s - 1));
        // One token back per refill period, never more than the burst.
        assert!(l.may_try(10 + s));
        l.failed(10 + s);
        assert!(!l.may_try(10 + s + 1));
        assert!(l.may_try(100 * s));
        for _ in 0..AUTH_BURST {
            assert!(l.may_try(100 * s));
            l.failed(100 * s);
        }
        assert!(!l.may_try(100 * s));
    }

    #[test]
    fn default_bound_limits_contexts_and_bytes_only() {
        let bound = default_bound(2, 3);
        let used = Amounts::ZERO;
        let charged = |r, n| charge(&bound, &used, &Amounts::ZERO, r, n, u64::MAX);
        assert_eq!(charged(Resource::Contexts, 2), Ok(2));
        assert_eq!(
            charged(Resource::Contexts, 3),
            Err(QuotaError::OverQuota(Resource::Contexts))
        );
        assert_eq!(charged(Resource::BoBytes, 3 << 20), Ok(3 << 20));
        assert_eq!(
            charged(Resource::BoBytes, (3 << 20) + 1),
            Err(QuotaError::OverQuota(Resource::BoBytes))
        );
        assert_eq!(charged(Resource::Tiles, 1 << 40), Ok(1 << 40));
        let defaults = default_bound(DEFAULT_CONTEXTS, DEFAULT_BO_MIB);
        assert!(
            DEFAULT_CONTEXTS_LIMITS.0 <= DEFAULT_CONTEXTS
                && DEFAULT_CONTEXTS <= DEFAULT_CONTEXTS_LIMITS.1
        );
        assert!(
            DEFAULT_BO_MIB_LIMITS.0 <= DEFAULT_BO_MIB && DEFAULT_BO_MIB <= DEFAULT_BO_MIB_LIMITS.1
        );
        assert_eq!(defaults.get(Resource::BoBytes), 1 << 30);
    }

    #[test]
    fn provider_commands_parse_or_are_refused() {
        let hex = b"00112233445566778899aabbccddeeFF";
        let code = parse_code(hex).unwrap();
        assert_eq!(code[0], 0x00);
        assert_eq!(code[15], 0xff);
        assert_eq!(
            ProviderCommand::parse(b"code 3\n", 2, 4),
            Some(ProviderCommand::Code {
                who: ProviderId::Tile(3)
            })
        );
        assert_eq!(
            ProviderCommand::parse(b"revoke 0", 2, 4),
            Some(ProviderCommand::Revoke {
                who: ProviderId::Tile(0)
            })
        );
        let mut line = [0u8; 64];
        let enrol = |tail: &[u8], line: &mut [u8; 64]| -> usize {
            let parts: [&[u8]; 3] = [b"enrol 1 ", hex, tail];
            let mut n = 0;
            for p in parts {
                line[n..n + p.len()].copy_from_slice(p);
                n += p.len();
            }
            n
        };
        let n = enrol(b"", &mut line);
        assert_eq!(
            ProviderCommand::parse(&line[..n], 2, 4),
            Some(ProviderCommand::Enrol {
                who: ProviderId::Tile(1),
                code,
                project: None
            })
        );
        let n = enrol(b" vision\n", &mut line);
        assert_eq!(
            ProviderCommand::parse(&line[..n], 2, 4),
            Some(ProviderCommand::Enrol {
                who: ProviderId::Tile(1),
                code,
                project: Some(&b"vision"[..])
            })
        );
        // Malformed: each is refused.
        for bad in [&b" vision x"[..], b" .hidden", b" ", b"  vision"] {
            let n = enrol(bad, &mut line);
            assert_eq!(ProviderCommand::parse(&line[..n], 2, 4), None);
        }
        for bad in [
            &b"code 4"[..],
            b"code",
            b"code -1",
            b"code 1 2",
            b"frob 1",
            b"revoke 99999999999",
            b"enrol 1 0011",
            b"enrol 1 00112233445566778899aabbccddeegg",
            b"",
            b"code node 2",
            b"code node",
            b"code nodes 1",
            b"code node 1 1",
            b"node 1",
            b"revoke node -1",
        ] {
            assert_eq!(ProviderCommand::parse(bad, 2, 4), None, "{bad:?}");
        }
        // A node: every word as for a tile, `node N` in its place.
        assert_eq!(
            ProviderCommand::parse(b"code node 1\n", 2, 4),
            Some(ProviderCommand::Code {
                who: ProviderId::Node(1)
            })
        );
        assert_eq!(
            ProviderCommand::parse(b"revoke node 0", 2, 4),
            Some(ProviderCommand::Revoke {
                who: ProviderId::Node(0)
            })
        );
        let mut line = [0u8; 64];
        let n = [&b"enrol node 1 "[..], hex, b" vision"]
            .iter()
            .fold(0, |n, p| {
                line[n..n + p.len()].copy_from_slice(p);
                n + p.len()
            });
        assert_eq!(
            ProviderCommand::parse(&line[..n], 2, 4),
            Some(ProviderCommand::Enrol {
                who: ProviderId::Node(1),
                code,
                project: Some(&b"vision"[..])
            })
        );
        assert_eq!(tiles_start_outside(0), Ok(false));
        assert_eq!(tiles_start_outside(1), Ok(true));
        assert!(tiles_start_outside(2).is_err());
    }

    #[test]
    fn a_started_member_takes_its_target_at_once_and_is_never_refused_within_it() {
        let mut pool = Amounts::ZERO;
        pool.set(Resource::Contexts, 4);
        pool.set(Resource::Tiles, u64::MAX);
        let pool = start_pool(&pool, 2);
        assert_eq!(pool.get(Resource::Tiles), 2);
        let mut target = Amounts::ZERO;
        target.set(Resource::Contexts, 3);
        target.set(Resource::Tiles, 2);
        // Nothing held yet: the whole target comes from the pool at once.
        let take = admit_start(&target, &Amounts::ZERO, &pool, &Amounts::ZERO, 2).unwrap();
        assert_eq!(take, target);
        // Another member holding one context: one short, all refused.
        let mut pool_used = Amounts::ZERO;
        pool_used.set(Resource::Contexts, 2);
        assert_eq!(
            admit_start(&target, &Amounts::ZERO, &pool, &pool_used, 2),
            Err(QuotaError::PoolBusy(Resource::Contexts))
        );
        // Holding one already: only the rest is taken.
        let mut used = Amounts::ZERO;
        used.set(Resource::Contexts, 1);
        let take = admit_start(&target, &used, &pool, &used, 2).unwrap();
        assert_eq!(take.get(Resource::Contexts), 2);
        // More tiles than the device has: all of them reserved.
        target.set(Resource::Tiles, 3);
        let take = admit_start(&target, &Amounts::ZERO, &pool, &Amounts::ZERO, 2).unwrap();
        assert_eq!(take.get(Resource::Tiles), 2);
        // Tiles past those enrolled for the member: until an enrolment.
        assert_eq!(
            admit_start(&target, &Amounts::ZERO, &pool, &Amounts::ZERO, 1),
            Err(QuotaError::NotEnrolled)
        );
        assert_eq!(
            admit_start(&target, &Amounts::ZERO, &pool, &Amounts::ZERO, 0),
            Err(QuotaError::NotEnrolled)
        );
        // Enrolled, and others' jobs hold every tile of the device (of
        // their own projects' tiles, say): not busy by count, the tiles
        // are taken by name.
        let mut tiles_used = Amounts::ZERO;
        tiles_used.set(Resource::Tiles, 2);
        assert_eq!(
            admit_start(&target, &Amounts::ZERO, &pool, &tiles_used, 2)
                .map(|t| t.get(Resource::Tiles)),
            Ok(2)
        );
        // Past the pool: never, so no wait.
        target.set(Resource::Contexts, 5);
        assert_eq!(
            admit_start(&target, &Amounts::ZERO, &pool, &Amounts::ZERO, 2),
            Err(QuotaError::PoolTooSmall(Resource::Contexts))
        );
        target.set(Resource::Contexts, 3);
        // A resource the pool does not limit is not reserved, even huge.
        let mut huge = target;
        huge.set(Resource::SharedBytes, u64::MAX);
        let mut unlimited = pool;
        unlimited.set(Resource::SharedBytes, u64::MAX);
        let take = admit_start(&huge, &Amounts::ZERO, &unlimited, &Amounts::ZERO, 2).unwrap();
        assert_eq!(take.get(Resource::SharedBytes), 0);
        assert_eq!(reservation(&huge, &unlimited).get(Resource::SharedBytes), 0);
        // Started with 3 reserved: charges within it take nothing from the
        // pool, even a full one; past the reservation, they do.
        let mut reserved = Amounts::ZERO;
        reserved.set(Resource::Contexts, 3);
        let mut request = reserved;
        request.set(Resource::Contexts, 4);
        let c = Resource::Contexts;
        for held in 0..3 {
            used.set(c, held);
            assert_eq!(charge(&request, &used, &reserved, c, 1, 0), Ok(0));
        }
        used.set(c, 3);
        assert_eq!(
            charge(&request, &used, &reserved, c, 1, 0),
            Err(QuotaError::PoolBusy(c))
        );
        assert_eq!(charge(&request, &used, &reserved, c, 1, 1), Ok(1));
        used.set(c, 4);
        assert_eq!(
            charge(&request, &used, &reserved, c, 1, 9),
            Err(QuotaError::OverQuota(c))
        );
        // Giving back: the pool gets only what was beyond the reservation.
        assert_eq!(uncharge(3, 4, 1), 1);
        assert_eq!(uncharge(3, 3, 1), 0);
        assert_eq!(uncharge(0, 3, 1), 1);
        assert_eq!(pool_share(&reserved, &used).get(c), 4);
        used.set(c, 1);
        assert_eq!(pool_share(&reserved, &used).get(c), 3);
    }

    #[test]
    fn rules_give_each_member_its_own_rights_on_an_object() {
        let rw = Rights::parse(b"rw").unwrap();
        let r_d = Rights::parse(b"dr").unwrap();
        assert_eq!(Rights::parse(b"w"), Some(rw));
        assert_eq!(Rights::parse(b"-"), Some(Rights::default()));
        assert_eq!(&rw.letters(), b"rw-");
        assert_eq!(&r_d.letters(), b"r-d");
        for bad in [&b""[..], b"rr", b"x", b"r-", b"rwdr"] {
            assert_eq!(Rights::parse(bad), None, "{bad:?}");
        }
        let other = Caller {
            admin: false,
            role: Some(Role::Member),
            owns_folder: false,
        };
        let stranger = Caller {
            admin: false,
            role: None,
            owns_folder: false,
        };
        // Another member's folder is read-only by the matrix; a rule makes
        // it read-write for this member, or takes reading away.
        assert_eq!(
            access(other, Folder::Member, Op::OpenWrite),
            Err(AccessError::Denied)
        );
        for op in [Op::OpenWrite, Op::MapWrite, Op::BindWrite, Op::OpenRead] {
            assert_eq!(access_by_rule(other, Folder::Member, op, Some(rw)), Ok(()));
        }
        let none = Some(Rights::default());
        assert_eq!(
            access_by_rule(other, Folder::Project, Op::OpenRead, none),
            Err(AccessError::Denied)
        );
        // Publishing stays the folder's; what is hidden stays hidden.
        assert_eq!(
            access_by_rule(other, Folder::Member, Op::Publish, Some(rw)),
            Err(AccessError::Denied)
        );
        assert_eq!(
            access_by_rule(stranger, Folder::Project, Op::OpenRead, Some(rw)),
            Err(AccessError::Hidden)
        );
        // Downloading is a right of its own; without a rule, writers may.
        assert!(may_download(None, true) && !may_download(None, false));
        assert!(may_download(Some(r_d), false) && !may_download(Some(rw), true));
    }

    #[test]
    fn rule_commands_name_an_object_a_user_and_rights() {
        let c = RuleCommand::parse(b"28/project/models/resnet 144 rd\n").unwrap();
        assert_eq!(c.path.project, Some(&b"28"[..]));
        assert_eq!(
            (c.path.kind, c.path.folder),
            (Folder::Project, Some(&b"models"[..]))
        );
        assert_eq!((c.uid, c.rights), (144, Rights::parse(b"rd")));
        let c = RuleCommand::parse(b"28/member/144/notes 145 default").unwrap();
        assert_eq!(
            (c.path.kind, c.path.member_uid, c.path.folder),
            (Folder::Member, 144, None)
        );
        assert_eq!(c.rights, None);
        let c = RuleCommand::parse(b"public/datasets/mnist 0 r").unwrap();
        assert_eq!((c.path.project, c.path.kind), (None, Folder::Public));
        for bad in [
            &b"28/project/models 144 r"[..],
            b"28/folder/models/x 144 r",
            b"28/member/abc/x 144 r",
            b"28/project/models/.x 144 r",
            b"28/project/models/x 144",
            b"28/project/models/x -1 r",
            b"28/project/models/x 144 r extra",
            b"28/project/models/x/y 144 r",
            b"private/models/x 144 r",
        ] {
            assert_eq!(RuleCommand::parse(bad), None, "{bad:?}");
        }
    }

    /// Outsiders holding all they may, `owners` namespace owners each
    /// taking the default bound of `per_owner` contexts one at a time
    /// beside members holding and reserving `pool_used`: what they hold
    /// together.
    fn outsiders_fill(d: &DeviceContexts, owners: u32, per_owner: u32, pool_used: u64) -> u64 {
        let c = Resource::Contexts;
        let bound = default_bound(per_owner, DEFAULT_BO_MIB);
        let mut outsiders = 0;
        for _ in 0..owners {
            let mut used = Amounts::ZERO;
            while charge(&bound, &used, &Amounts::ZERO, c, 1, u64::MAX).is_ok()
                && d.admit_outsiders(outsiders, pool_used, 1).is_ok()
            {
                used.set(c, used.get(c) + 1);
                outsiders += 1;
            }
        }
        outsiders
    }

    /// The free contexts of the members' pool, as `Book::charge` gives
    /// them to [`charge`].
    fn members_free(d: &DeviceContexts, pool: &Amounts, pool_used: &Amounts, out: u64) -> u64 {
        let c = Resource::Contexts;
        let taken = d.members_taken(pool, pool_used, out).get(c);
        d.members_pool(pool).get(c).saturating_sub(taken)
    }

    /// The default device (16 384 contexts, a pool of 1 024): 16 owners
    /// at the default bound stop at the outsiders' share, which leaves the
    /// whole pool and root's reserve; a started member creates its
    /// reserved contexts, never refused, and an unstarted one still finds
    /// the rest of the pool.
    #[test]
    fn outsiders_leave_the_pool_and_roots_reserve() {
        let c = Resource::Contexts;
        let pool = pool_from_values(1024, 1024).unwrap();
        let d = DeviceContexts::new(16_384, pool.get(c));
        assert_eq!(
            d,
            DeviceContexts {
                charged: 16_320,
                outsiders: 15_296
            }
        );
        let mut target = Amounts::ZERO;
        target.set(c, 64);
        let taken = d.members_taken(&pool, &Amounts::ZERO, 0);
        let take = admit_start(
            &target,
            &Amounts::ZERO,
            &d.members_pool(&pool),
            &taken,
            u64::MAX,
        )
        .unwrap();
        let pool_used = take;
        assert_eq!(pool_used.get(c), 64);
        let outsiders = outsiders_fill(&d, 16, DEFAULT_CONTEXTS, pool_used.get(c));
        assert_eq!(outsiders, 15_296);
        // One more outsider context, from anyone: refused.
        assert_eq!(
            d.admit_outsiders(outsiders, pool_used.get(c), 1),
            Err(QuotaError::PoolBusy(c))
        );
        let mut used = Amounts::ZERO;
        for _ in 0..64 {
            let free = members_free(&d, &pool, &pool_used, outsiders);
            assert_eq!(charge(&target, &used, &target, c, 1, free), Ok(0));
            used.set(c, used.get(c) + 1);
        }
        // The rest of the pool for the others; root's reserve untouched.
        assert_eq!(members_free(&d, &pool, &pool_used, outsiders), 1024 - 64);
        assert_eq!(16_384 - outsiders - 1024, ROOT_RESERVE_CONTEXTS);
    }

    /// A pool as large as the device: outsiders keep half of it at most,
    /// and never what members hold or reserve; members take the pool only
    /// where outsiders left the device free, a start waits for them (busy,
    /// not too small), and no start past what the device can charge is
    /// ever admitted.
    #[test]
    fn a_pool_as_large_as_the_device() {
        let c = Resource::Contexts;
        let pool = pool_from_values(1_000_000, 1024).unwrap();
        let d = DeviceContexts::new(16_384, pool.get(c));
        assert_eq!(d.outsiders, 8192);
        assert_eq!(d.members_pool(&pool).get(c), 16_320);
        assert_eq!(outsiders_fill(&d, 64, 1024, 0), 8192);
        let mut target = Amounts::ZERO;
        target.set(c, 10_000);
        let limit = d.members_pool(&pool);
        let mut pool_used = Amounts::ZERO;
        let taken = d.members_taken(&pool, &pool_used, 0);
        pool_used = pool_used
            .plus(&admit_start(&target, &Amounts::ZERO, &limit, &taken, u64::MAX).unwrap());
        let outsiders = outsiders_fill(&d, 64, 1024, pool_used.get(c));
        assert_eq!(outsiders, 16_320 - 10_000);
        let mut one = Amounts::ZERO;
        one.set(c, 1);
        let taken = d.members_taken(&pool, &pool_used, outsiders);
        assert_eq!(
            admit_start(&one, &Amounts::ZERO, &limit, &taken, u64::MAX),
            Err(QuotaError::PoolBusy(c))
        );
        assert_eq!(members_free(&d, &pool, &pool_used, outsiders), 0);
        // Once an outsider gives one back, the start fits.
        let taken = d.members_taken(&pool, &pool_used, outsiders - 1);
        assert_eq!(
            admit_start(&one, &Amounts::ZERO, &limit, &taken, u64::MAX),
            Ok(one)
        );
        target.set(c, 16_321);
        let taken = d.members_taken(&pool, &Amounts::ZERO, 0);
        assert_eq!(
            admit_start(&target, &Amounts::ZERO, &limit, &taken, u64::MAX),
            Err(QuotaError::PoolTooSmall(c))
        );
    }

    /// The shares of small and odd devices: never more than the device
    /// less root's reserve, outsiders never more than that either.
    #[test]
    fn device_shares_stay_within_the_device() {
        for device in [0, 1, 64, 65, 100, 128, 16_384] {
            for pool in [1, 10, 64, 1000, 1_000_000] {
                let d = DeviceContexts::new(device, pool);
                assert!(d.charged + ROOT_RESERVE_CONTEXTS.min(device) == device);
                assert!(d.outsiders <= d.charged, "{device} {pool}");
                assert!(
                    d.outsiders >= (device / 2).min(d.charged),
                    "{device} {pool}"
                );
            }
        }
    }
}
