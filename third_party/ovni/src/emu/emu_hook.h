/* Copyright (c) 2021-2023 Barcelona Supercomputing Center (BSC)
 * SPDX-License-Identifier: GPL-3.0-or-later */

#ifndef EMU_HOOK_H
#define EMU_HOOK_H

struct emu;
typedef int (emu_hook_t)(struct emu *emu);

#endif /* EMU_HOOK_H */
