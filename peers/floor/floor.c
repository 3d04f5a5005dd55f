/* floor.c — the memory floors' shared rules and their CPU implementations (floor.h): on the
 * CPU, floor.read is the checksum of the logits (every byte read once) and floor.copy a
 * memcpy of them into the workspace. The GPU ones are floor_gpu.cu. */
#include <string.h>

#include "../../algos/common/half.h"
#include "floor.h"

uint32_t floor_checksum(const void *bytes, size_t n)
{
    const unsigned char *b = bytes;
    uint64_t wide = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        wide ^= w;
    }
    uint32_t sum = (uint32_t)wide ^ (uint32_t)(wide >> 32); /* little-endian words */
    for (; i < n; i++)
        sum ^= (uint32_t)b[i] << (8 * (i % 4));
    return sum;
}

int floor_supports(const struct tkp_problem *pb, const void *opts, const char **why)
{
    (void)opts;
    if (pb->stride != pb->vocab) {
        *why = "the memory floors read a contiguous batch (stride == vocab)";
        return 0;
    }
    return 1;
}

size_t floor_batch_bytes(const struct tkp_problem *pb)
{
    return (size_t)(pb->batch * pb->vocab) * (size_t)tkp_dtype_size(pb->dtype);
}

struct floor_cpu_state {
    struct tkp_problem pb;
};

static int floor_cpu_init(void *state, const struct tkp_problem *pb, const void *opts,
                          size_t *workspace_bytes, int copy, struct tkp_error *err)
{
    (void)opts, (void)err;
    ((struct floor_cpu_state *)state)->pb = *pb;
    *workspace_bytes = copy ? floor_batch_bytes(pb) : sizeof(uint32_t);
    return TKP_OK;
}

static int read_init(void *state, const struct tkp_problem *pb, const void *opts,
                     size_t *workspace_bytes, struct tkp_error *err)
{
    return floor_cpu_init(state, pb, opts, workspace_bytes, 0, err);
}

static int copy_init(void *state, const struct tkp_problem *pb, const void *opts,
                     size_t *workspace_bytes, struct tkp_error *err)
{
    return floor_cpu_init(state, pb, opts, workspace_bytes, 1, err);
}

static int read_run(void *state, const struct tkp_io *io, void *workspace, void *stream,
                    struct tkp_error *err)
{
    (void)stream, (void)err;
    const struct floor_cpu_state *s = state;
    const uint32_t sum = floor_checksum(io->logits, floor_batch_bytes(&s->pb));
    memcpy(workspace, &sum, sizeof sum);
    return TKP_OK;
}

static int copy_run(void *state, const struct tkp_io *io, void *workspace, void *stream,
                    struct tkp_error *err)
{
    (void)stream, (void)err;
    const struct floor_cpu_state *s = state;
    memcpy(workspace, io->logits, floor_batch_bytes(&s->pb));
    return TKP_OK;
}

const struct tkp_impl tkp_floor_read_cpu = {
    sizeof(struct floor_cpu_state), floor_supports, read_init, read_run, NULL, NULL,
    FLOOR_DTYPES,
};
const struct tkp_impl tkp_floor_copy_cpu = {
    sizeof(struct floor_cpu_state), floor_supports, copy_init, copy_run, NULL, NULL,
    FLOOR_DTYPES,
};
