/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vgsched: the C debugfs helpers debugfs.rs declares (see debugfs.c).
 */
#ifndef _VGSCHED_DEBUGFS_H_
#define _VGSCHED_DEBUGFS_H_

#include <linux/types.h>

struct dentry;
struct seq_file;
struct vgsched_debugfs_file;

struct dentry *vgsched_debugfs_dir_get(const char *unique);
void vgsched_debugfs_dir_put(struct dentry *dir);
struct vgsched_debugfs_file *
vgsched_debugfs_file_create(struct dentry *dir, const char *name,
			    int (*show)(struct seq_file *m, void *data),
			    int (*write)(void *data, const char *text, size_t len), void *data);
struct vgsched_debugfs_file *
vgsched_debugfs_records_create(struct dentry *dir, const char *name, size_t (*records)(void *data),
			       int (*show_record)(struct seq_file *m, void *data, size_t index),
			       void *data);
void vgsched_debugfs_file_remove(struct vgsched_debugfs_file *file);

#endif /* _VGSCHED_DEBUGFS_H_ */
