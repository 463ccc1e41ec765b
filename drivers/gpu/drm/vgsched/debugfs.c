// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched: read-only files in the DRM device's own debugfs directory.
 *
 * The DRM core gives every device a debugfs directory,
 * /sys/kernel/debug/dri/<unique>, with a symbolic link dri/<minor> for
 * each of its minors (drm_debugfs_dev_init() and drm_debugfs_register() in
 * drivers/gpu/drm/drm_debugfs.c), and removes it in drm_dev_unregister().
 * C drivers add their files from drm_driver.debugfs_init or with
 * drm_debugfs_add_files(); the Rust DRM abstractions of Linux 7.3 offer
 * neither (the vtable's debugfs_init is NULL and the struct drm_device is
 * not reachable from a driver), and the Rust debugfs API can only create
 * directories of its own.
 *
 * The contract, on public API only:
 *
 *  - vgsched_debugfs_dir_get() finds the directory by its name: the DRM
 *    core names it after the parent device (dev->unique = dev_name(parent)
 *    in drm_dev_init()), which the module names itself (the faux device).
 *    It returns a referenced dentry (debugfs_lookup()), or NULL when
 *    debugfs is off or the directory does not exist;
 *    vgsched_debugfs_dir_put() drops the reference.
 *  - vgsched_debugfs_file_create() adds a seq_file whose show callback is
 *    @show(m, @data): read-only (0444) when @write is NULL, else also
 *    writable by its owner (0644), a write of at most 31 bytes being
 *    handed to @write(@data, text, len) as a NUL-terminated string (its
 *    result, 0 or a negative errno, is the write's). debugfs_create_file()
 *    wraps the file operations so that removal waits for reads and writes
 *    in progress.
 *  - vgsched_debugfs_records_create() adds a read-only (0444) seq_file
 *    read one record at a time, for a view too large to copy at once:
 *    @records(@data) says how many records there are now, and
 *    @show_record(m, @data, i) prints record i (0 or a negative errno, or
 *    SEQ_SKIP to print nothing). Each record is taken on its own, so a
 *    record's printer holds what it reads (a lock) only for that record;
 *    the count is asked again before each record, and a record that no
 *    longer fits the buffer is printed again into a larger one.
 *  - vgsched_debugfs_file_remove() removes either kind of file, waiting for
 *    any read or write in progress, so @data may go away when it returns.
 *
 * The caller removes its files before the DRM device is unregistered (the
 * core then removes the whole directory) and keeps the directory's
 * reference until then.
 */

#include <linux/debugfs.h>
#include <linux/dcache.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "debugfs.h"

/* One file: its dentry and what its callbacks get. */
struct vgsched_debugfs_file {
	struct dentry *dentry;
	int (*show)(struct seq_file *m, void *data);
	int (*write)(void *data, const char *text, size_t len);
	/* A file of records: their count now, and one record's printer. */
	size_t (*records)(void *data);
	int (*show_record)(struct seq_file *m, void *data, size_t index);
	void *data;
};

static int vgsched_debugfs_show(struct seq_file *m, void *unused)
{
	struct vgsched_debugfs_file *file = m->private;

	return file->show(m, file->data);
}
DEFINE_SHOW_ATTRIBUTE(vgsched_debugfs);

static int vgsched_debugfs_rw_show(struct seq_file *m, void *unused)
{
	return vgsched_debugfs_show(m, unused);
}

static ssize_t vgsched_debugfs_rw_write(struct file *f, const char __user *ubuf, size_t len,
					loff_t *pos)
{
	struct vgsched_debugfs_file *file = ((struct seq_file *)f->private_data)->private;
	char text[32];
	int ret;

	if (len >= sizeof(text))
		return -EINVAL;
	if (copy_from_user(text, ubuf, len))
		return -EFAULT;
	text[len] = '\0';
	ret = file->write(file->data, text, len);
	return ret ? ret : len;
}
DEFINE_SHOW_STORE_ATTRIBUTE(vgsched_debugfs_rw);

/* Record @pos, if there is one now: its number plus one (never NULL). */
static void *vgsched_debugfs_record(struct seq_file *m, loff_t pos)
{
	struct vgsched_debugfs_file *file = m->private;

	if (pos < 0 || pos >= file->records(file->data))
		return NULL;
	return (void *)(uintptr_t)(pos + 1);
}

static void *vgsched_debugfs_records_start(struct seq_file *m, loff_t *pos)
{
	return vgsched_debugfs_record(m, *pos);
}

static void *vgsched_debugfs_records_next(struct seq_file *m, void *v, loff_t *pos)
{
	++*pos;
	return vgsched_debugfs_record(m, *pos);
}

static void vgsched_debugfs_records_stop(struct seq_file *m, void *v)
{
}

static int vgsched_debugfs_records_show(struct seq_file *m, void *v)
{
	struct vgsched_debugfs_file *file = m->private;

	return file->show_record(m, file->data, (uintptr_t)v - 1);
}

static const struct seq_operations vgsched_debugfs_records_ops = {
	.start = vgsched_debugfs_records_start,
	.next = vgsched_debugfs_records_next,
	.stop = vgsched_debugfs_records_stop,
	.show = vgsched_debugfs_records_show,
};

static int vgsched_debugfs_records_open(struct inode *inode, struct file *f)
{
	int ret = seq_open(f, &vgsched_debugfs_records_ops);

	if (!ret)
		((struct seq_file *)f->private_data)->private = inode->i_private;
	return ret;
}

static const struct file_operations vgsched_debugfs_records_fops = {
	.owner = THIS_MODULE,
	.open = vgsched_debugfs_records_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = seq_release,
};

struct dentry *vgsched_debugfs_dir_get(const char *unique)
{
	struct dentry *dri = debugfs_lookup("dri", NULL);
	struct dentry *dir;

	if (IS_ERR_OR_NULL(dri))
		return NULL;
	dir = debugfs_lookup(unique, dri);
	dput(dri);
	return IS_ERR_OR_NULL(dir) ? NULL : dir;
}

void vgsched_debugfs_dir_put(struct dentry *dir)
{
	dput(dir);
}

struct vgsched_debugfs_file *
vgsched_debugfs_file_create(struct dentry *dir, const char *name,
			    int (*show)(struct seq_file *m, void *data),
			    int (*write)(void *data, const char *text, size_t len), void *data)
{
	struct vgsched_debugfs_file *file = kzalloc(sizeof(*file), GFP_KERNEL);

	if (!file)
		return NULL;
	file->show = show;
	file->write = write;
	file->data = data;
	/* An error (debugfs off) leaves an ERR_PTR, which removal ignores. */
	file->dentry = debugfs_create_file(name, write ? 0644 : 0444, dir, file,
					   write ? &vgsched_debugfs_rw_fops : &vgsched_debugfs_fops);
	return file;
}

struct vgsched_debugfs_file *
vgsched_debugfs_records_create(struct dentry *dir, const char *name, size_t (*records)(void *data),
			       int (*show_record)(struct seq_file *m, void *data, size_t index),
			       void *data)
{
	struct vgsched_debugfs_file *file = kzalloc(sizeof(*file), GFP_KERNEL);

	if (!file)
		return NULL;
	file->records = records;
	file->show_record = show_record;
	file->data = data;
	/* As above: an error leaves an ERR_PTR, which removal ignores. */
	file->dentry = debugfs_create_file(name, 0444, dir, file, &vgsched_debugfs_records_fops);
	return file;
}

void vgsched_debugfs_file_remove(struct vgsched_debugfs_file *file)
{
	if (!file)
		return;
	debugfs_remove(file->dentry);
	kfree(file);
}
