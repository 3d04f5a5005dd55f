/* plan.c — what a planned cell says of itself (plan.h): the name of its filter mode, as the
 * results' `mode` column and the plan lines print it (README.md, "Results"). */
#include "../algos/common/prob.h"
#include "plan.h"

const char *tkp_mode_name(int32_t k, float p, int64_t vocab)
{
    int topk = tkp_topk_on(k, vocab), topp = tkp_topp_on(p);
    return topk && topp ? "topk_topp" : topk ? "topk" : topp ? "topp" : "none";
}
