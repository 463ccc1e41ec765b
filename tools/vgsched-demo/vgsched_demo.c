// SPDX-License-Identifier: GPL-2.0
/*
 * vgsched-demo: what the main job runs in the guest. Opens the vgsched
 * render node, asks the driver who it is and what the virtual GPU looks
 * like, and prints it for a human.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vgsched_test_util.h"

int main(void)
{
	char name[32] = {}, desc[64] = {};
	struct drm_version v = {
		.name = name, .name_len = sizeof(name) - 1,
		.desc = desc, .desc_len = sizeof(desc) - 1,
	};
	struct drm_vgsched_gpu_info info;
	int fd, ret;

	fd = vgsched_open_render_node();
	if (fd < 0) {
		fprintf(stderr, "vgsched-demo: no vgsched render node (is the module loaded?)\n");
		return 1;
	}
	if (ioctl(fd, DRM_IOCTL_VERSION, &v)) {
		perror("vgsched-demo: DRM_IOCTL_VERSION");
		return 1;
	}
	ret = vgsched_query_gpu_info(fd, &info);
	if (ret) {
		fprintf(stderr, "vgsched-demo: DEV_QUERY failed: %s\n", strerror(-ret));
		return 1;
	}

	printf("driver           %s %d.%d.%d (%s)\n", name, v.version_major,
	       v.version_minor, v.version_patchlevel, desc);
	printf("uAPI             %u.%u\n", info.uapi_major, info.uapi_minor);
	printf("execution        %u modules x %u units = %u units\n", info.modules,
	       info.units_per_module, info.modules * info.units_per_module);
	printf("context slots    %u (time slice t0 = %u us)\n", info.hw_slots,
	       info.time_slice_us);
	printf("per unit         %u vector / %u scalar register blocks, %u wave slots\n",
	       info.vgpr_blocks, info.sgpr_blocks, info.wave_slots);
	printf("per module       %u shared-memory blocks\n", info.shared_mem_blocks);
	close(fd);
	return 0;
}
