/* limits_config.h — the named limits of a run, in one place (docs/CONFIGS.md, "Configs"): a config that
 * goes past one fails with an error naming the config file, the value and the limit, never
 * a crash or a hang. `topkp list` prints them under "limits:". One #define per limit; those of
 * the file readers and writers are in limits_files.h, included here. */
#ifndef TKP_LIMITS_CONFIG_H
#define TKP_LIMITS_CONFIG_H

#define TKP_LUA_INSTRUCTION_BUDGET 20000000 /* Lua instructions a config may run, `where` included */
#define TKP_LUA_MEMORY_MIB 256              /* MiB of memory the config's Lua state may hold */
#define TKP_LUA_SECONDS 10                  /* wall-clock seconds a config may run (C functions too) */
#define TKP_CONFIG_MAX_BYTES (16 << 20)     /* bytes of a config file, and of a file it includes */
#define TKP_CONFIG_MAX_INCLUDE_DEPTH 8      /* includes running one inside the other (a cycle stops sooner) */
#define TKP_CONFIG_MAX_INCLUDES 64          /* distinct files a config includes */
#define TKP_MAX_SWEEPS 10000                /* sweep and ablation declarations in a config */
#define TKP_MAX_CELLS 1000000               /* cells of a run, and of one sweep's cross product */
#define TKP_MAX_LIST_VALUES 64              /* values of one list: algos, dataset, vocab, batch, k, p, variants */
#define TKP_MAX_NAME_CHARS 63               /* characters of a sweep name or a variant label */
#define TKP_MAX_DATASET_CHARS 255           /* characters of a dataset, file "x.h5" with its folder */
#define TKP_MAX_WARMUP 1000000              /* timing.warmup: untimed calls before a cell */
#define TKP_MAX_REPS 1000000                /* timing.min_reps and timing.max_reps */
#define TKP_MAX_TIMING_SECONDS 86400        /* timing.warmup_seconds, max_seconds and timeout */

#include "limits_files.h"

#endif
