#!/usr/bin/env bash
# session s8 call D: cake's partial-step skip limited to one-step slices (bundle fin2) against the
# 16-byte-load build (w16): the cake tests on fin2, then the cake cells of targets_bf16.lua, two
# rounds alternating.
set -u
L=$OUT/work; mkdir -p $L/ab
(cd .gpu-carry && tar -xJf w16.tar.xz && tar -xJf fin2.tar.xz)
W=$PWD/.gpu-carry/gpu-w16; F=$PWD/.gpu-carry/gpu-fin2
t0=$SECONDS
TOPKP=$F/topkp timeout 100 $F/topkp-tests cake > $L/cake-tests-fin2.log 2>&1
echo "cake tests rc=$? in $((SECONDS - t0)) s"; grep -E "FAIL|passed, " $L/cake-tests-fin2.log | cut -c1-300 | tail -8
S="configs/h200/targets_bf16.lua --backend gpu --sweep topk50_topp09_dtype --only cake"
for round in 1 2; do
  $W/topkp run $S -o $L/ab/w16-$round.h5 > $L/ab/w16-$round.log 2>&1; echo "w16 $round rc=$?"
  $F/topkp run $S -o $L/ab/fin2-$round.h5 > $L/ab/fin2-$round.log 2>&1; echo "fin2 $round rc=$?"
done
for f in $L/ab/*.h5; do $F/topkp export $f 2>/dev/null | awk -F'\t' -v n=$(basename $f .h5) 'NR==1{for(i=1;i<=NF;i++)c[$i]=i;next}{print n,$(c["vocab"]),$(c["batch"]),$(c["dtype"]),$(c["status"]),$(c["median_us"])}'; done | sort -k2,2n -k3,3n -k4,4 -k1,1
cd $L && tar -czf $OUT/run22-logs.tgz .
