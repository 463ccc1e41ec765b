# SPDX-License-Identifier: GPL-2.0
#
# Sphinx configuration of the vgsched documentation. Minimal on purpose:
# the pages are plain reStructuredText, built by `make check` with
# `sphinx-build -W -b html` (warnings are errors), as the kernel builds its
# own Documentation/. Only bookworm's python3-sphinx is needed.

project = "vgsched"
copyright = "The vgsched authors"
author = "The vgsched authors"

root_doc = "index"
source_suffix = {".rst": "restructuredtext"}
exclude_patterns = ["_build"]
extensions = []

# Every page must be reachable from the index, and every reference must
# resolve (-W turns both into errors).
nitpicky = False
highlight_language = "none"

html_theme = "alabaster"
html_title = "vgsched"
