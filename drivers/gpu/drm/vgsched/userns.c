// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched: whom the default bound of a uid in no project is counted
 * against (projects.rs), on public API.
 *
 * A user namespace gives an ordinary account up to 65 536 uids of its
 * own: counted per uid, the default bound would be multiplied by them. So
 * it is counted per *owner* instead, the way the kernel's ucounts charge
 * RLIMIT_NPROC and the other per-user limits in the initial namespace:
 * the uid that created the caller's outermost user namespace (the child of
 * init_user_ns in its chain), as the initial namespace sees it. A process
 * in init_user_ns is its own owner: its effective uid, and so is one in a
 * namespace root made (below). The Rust binding of
 * Linux 7.3 has no user-namespace abstraction; struct user_namespace's
 * parent and owner are public fields of include/linux/user_namespace.h.
 */

#include <linux/cred.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>

#include "userns.h"

/*
 * The owner of the current task's credentials, as a kuid's value (the
 * same numbers as the file's uid, taken with it at open()). The chain
 * needs no lock: the task's credentials hold a reference to their user
 * namespace, and every namespace holds one to its parent and never
 * changes its parent or owner. Without CONFIG_USER_NS every task is in
 * init_user_ns and the loop does not run.
 */
u32 vgsched_current_bound_owner(void)
{
	const struct user_namespace *ns = current_user_ns();
	kuid_t owner = current_euid();

	while (ns != &init_user_ns && ns->parent) {
		owner = ns->owner;
		ns = ns->parent;
	}
	/*
	 * A namespace root made (a container manager's: LXD, Docker with
	 * userns-remap, systemd-nspawn -U) gives out uids root chose, each its
	 * own user of the initial namespace: they are counted each as itself,
	 * as before user namespaces, not all against root.
	 */
	if (uid_eq(owner, GLOBAL_ROOT_UID))
		return __kuid_val(current_euid());
	return __kuid_val(owner);
}
