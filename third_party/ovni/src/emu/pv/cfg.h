/* Copyright (c) 2021-2023 Barcelona Supercomputing Center (BSC)
 * SPDX-License-Identifier: GPL-3.0-or-later */

#ifndef CFG_H
#define CFG_H

#include "common.h"

USE_RET int cfg_generate(const char *tracedir);

#endif /* CFG_H */
