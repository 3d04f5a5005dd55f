#!/usr/bin/env bash
# session s8 call C: the final build of the session (bundle fin: cake's partial-step skip, the
# shard/merge/--gpus runner): every GPU test; cake's cells of targets_bf16.lua against the
# 16-byte-load build (w16), two rounds alternating; the modules' bf16 targets once more; and the
# multi-GPU runner on this one GPU: --gpus all and --device 0 --shard I/2 + merge, each against
# a plain run of configs/quick.lua (same cells, statuses and exactness columns).
set -u
L=$OUT/work; mkdir -p $L/ab $L/shard
(cd .gpu-carry && tar -xJf w16.tar.xz && tar -xJf fin.tar.xz)
W=$PWD/.gpu-carry/gpu-w16; F=$PWD/.gpu-carry/gpu-fin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$SECONDS
TOPKP=$F/topkp timeout 170 $F/topkp-tests gpu_ > $L/gpu-tests-fin.log 2>&1
echo "gpu tests rc=$? in $((SECONDS - t0)) s"; grep -E "FAIL|passed, " $L/gpu-tests-fin.log | cut -c1-300 | tail -12
S="configs/h200/targets_bf16.lua --backend gpu --sweep topk50_topp09_dtype --only cake"
for round in 1 2; do
  $W/topkp run $S -o $L/ab/w16-$round.h5 > $L/ab/w16-$round.log 2>&1; echo "w16 $round rc=$?"
  $F/topkp run $S -o $L/ab/fin-$round.h5 > $L/ab/fin-$round.log 2>&1; echo "fin $round rc=$?"
done
for f in $L/ab/*.h5; do $F/topkp export $f 2>/dev/null | awk -F'\t' -v n=$(basename $f .h5) 'NR==1{for(i=1;i<=NF;i++)c[$i]=i;next}{print n,$(c["vocab"]),$(c["batch"]),$(c["dtype"]),$(c["status"]),$(c["median_us"])}'; done | sort -k2,2n -k3,3n -k4,4 -k1,1
t0=$SECONDS
timeout 90 $F/topkp run configs/h200/targets_bf16.lua --backend gpu --sweep topk50_topp09_dtype -o $OUT/targets_bf16_fin.h5 > $L/targets_fin.log 2>&1
echo "targets rc=$? in $((SECONDS - t0)) s"
Q="configs/quick.lua --backend gpu"
key() { $F/topkp export $1 2>/dev/null | awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)c[$i]=i;next}{print $(c["sweep"]),$(c["algo"]),$(c["options"]),$(c["dataset"]),$(c["vocab"]),$(c["batch"]),$(c["k"]),$(c["p"]),$(c["dtype"]),$(c["status"]),$(c["rows_checked"]),$(c["rows_exact"])}' | sort; }
t0=$SECONDS; $F/topkp run $Q -o $L/shard/one.h5 > $L/shard/one.log 2>&1; echo "one-process run rc=$? $((SECONDS - t0)) s"
t0=$SECONDS; $F/topkp run $Q --gpus all -o $L/shard/gpus.h5 > $L/shard/gpus.log 2>&1; echo "--gpus all rc=$? $((SECONDS - t0)) s"; tail -3 $L/shard/gpus.log
for i in 0 1; do $F/topkp run $Q --device 0 --shard $i/2 -o $L/shard/s$i.h5 > $L/shard/s$i.log 2>&1; echo "shard $i/2 rc=$?"; done
$F/topkp merge $L/shard/merged.h5 $L/shard/s0.h5 $L/shard/s1.h5 > $L/shard/merge.log 2>&1; echo "merge rc=$?"; tail -2 $L/shard/merge.log
key $L/shard/one.h5 > $L/shard/one.keys; key $L/shard/gpus.h5 > $L/shard/gpus.keys; key $L/shard/merged.h5 > $L/shard/merged.keys
echo "cells: one $(wc -l < $L/shard/one.keys), gpus $(wc -l < $L/shard/gpus.keys), merged $(wc -l < $L/shard/merged.keys)"
diff $L/shard/one.keys $L/shard/gpus.keys > /dev/null && echo "--gpus all = one-process run (cells, statuses, exactness)" || { echo "--gpus all DIFFERS"; diff $L/shard/one.keys $L/shard/gpus.keys | head; }
diff $L/shard/one.keys $L/shard/merged.keys > /dev/null && echo "shards 0/2 + 1/2 merged = one-process run" || { echo "merged DIFFERS"; diff $L/shard/one.keys $L/shard/merged.keys | head; }
$F/topkp info $L/shard/merged.h5 2>&1 | grep -iE "device|shard|merged" | head -8
cd $L && tar -czf $OUT/run21-logs.tgz .
