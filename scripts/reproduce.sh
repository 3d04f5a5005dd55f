#!/usr/bin/env bash
# reproduce.sh — `make reproduce`: every sweep the report needs (docs/CAMPAIGN.md), modules and
# peers in one run per file, from one binary at one commit, into one folder
# results/<device>-<YYYY-MM-DD>/ (<device>: h100, h200, ... from the GPU's name; `cpu` on the CPU
# backend), then the report when TeX is present. The work is cut into the chunks of
# scripts/campaign-chunks.tsv, each a `topkp run ... --resume` of under 10 minutes on one GPU:
# a killed or timed-out chunk runs again from its last finished cell. campaign.tsv in the folder
# has one line per chunk (file, sweep, commit, binary_sha256, device, backend, start, end,
# status, chunk); status is `ok`, `ok; <note>` (e.g. peers that cannot be imported here) or
# `missing: <why>` (a GPU-only chunk on the CPU, no real-model logits file, a failed or stopped run).
#
#   scripts/reproduce.sh [--out DIR] [--chunk NAME|N]... [--budget SECONDS] [--backend cpu|gpu]
#                        [--gpus all|G,... | --workers N] [--allow-dirty] [--chunks FILE] [--no-paper]
#   scripts/reproduce.sh --list-chunks [--backend cpu|gpu]
#
# Without --chunk it runs every chunk not yet `ok` in the folder's campaign.tsv; --budget S skips
# each chunk whose estimate (x1.15) would end past S seconds and kills a running chunk at S
# (the GPU machine's 10-minute calls: scripts/gpu-reproduce.sh). --gpus runs each file's chunks
# as one `topkp run --gpus` over those GPUs (shard files take one plan, so a file is not split;
# its other chunks are recorded with the first's status); --workers N does the same with N
# processes on the CPU backend. It refuses, naming both, a tree
# with uncommitted changes to tracked files or a binary built at another commit or from a dirty
# tree, unless --allow-dirty, and always a folder whose campaign.tsv names another binary (the
# report refuses sections that mix commits or binaries). TOPKP names the binary (default build/topkp; the
# GPU tests run topkp-tests beside it).
#
# GPU estimate, one H200 (the gpu_s column): from the committed H200 files' cell_seconds
# (results/h200/fig2_modules.h5 under the GPU timer's defaults; the peers' cells of
# fig2_throughput.h5, taken at 3 repetitions, scaled to 60 repetitions of (median + 1.5 ms) when
# faster than 0.5 ms, else 20; fig4_memory.h5, peers_exactness.h5, table4_ablation.h5,
# table1_hitrate.h5, cake_topp_launch.h5 and targets.h5 for the cake cells), restricted to the
# trimmed grids, plus the oracle at 150 ns a judged logit for the rows judged beyond one at 4
# rows a cell (16 in table4), on one core. Every row is judged now, by an oracle built once a
# row, k and p a chunk (1.5 ms a 262k row with top-k, 26 ms with top-p alone, 0.2 ms a check,
# on one core of the 2-core CPU) on 16 cores: about 8 s for each of Figure 2's chunks, 1.3 for
# fig4, 1.4 for table1 (twice that at half the cores' speed-up), under the old term (37, 31, 62,
# 32 s; cake_seed 20, table4 3.5) everywhere but table1 (0.3 s), which grows by 3 s:
#   gpu_tests 150 (64 tests took 78 s at 63f4d0b, results/h200/sanitizers-2026-12-02; 115 now)
#   table1 18   table1_real 10   table4 35
#   cake_seed 155   exactness 115   exactness_16bit 115   fig4 130   fig2_modules 196
#   fig2_vllm_torch 253 (174 of them vLLM's Triton compiles)   fig2_rest 140   fig2_real 60 (guess)
#   = 1377 s, about 23 minutes, plus about 10 s a chunk of start-up (Python imports) and 15 s a
#   device call (the bundle and the peers kit): about 25 minutes in three calls of at most 9.5
#   (--budget 560 packs 483, 501 and 393 s of estimates).
# On the CPU backend the whole campaign took 7 min 45 s on 2 busy cores at 4b87481, 6 min 32 s
# with torch's peers at e82d197 (docs/CAMPAIGN.md).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
TOPKP=${TOPKP:-build/topkp}
REAL_GLOB=${REAL_GLOB:-datasets/real/*.h5}   # the real-model logits file (scripts/dump_logits.py)
REAL_TARGET="make real-logits"                # what writes it

die() { echo "reproduce.sh: $*" >&2; exit 2; }
usage() { sed -n '12,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

out="" budget=0 backend="" multi=() allow_dirty=0 list=0 paper=1 chunks_file=scripts/campaign-chunks.tsv
wanted=()
while (($#)); do
    case $1 in
        --out) out=${2:?--out needs a folder}; shift ;;
        --chunk) wanted+=("${2:?--chunk needs a name or number}"); shift ;;
        --budget) budget=${2:?--budget needs seconds}; shift ;;
        --backend) backend=${2:?--backend needs cpu or gpu}; shift ;;
        --chunks) chunks_file=${2:?--chunks needs a file}; shift ;;
        --allow-dirty) allow_dirty=1 ;;
        --list-chunks) list=1 ;;
        --no-paper) paper=0 ;;
        --gpus) multi=(--gpus "${2:?--gpus needs all or a list of devices}"); shift ;;
        --workers) multi=(--workers "${2:?--workers needs a number}"); shift ;;
        -h|--help) usage ;;
        *) echo "reproduce.sh: unknown argument $1" >&2; usage ;;
    esac
    shift
done
[[ $budget =~ ^[0-9]+$ ]] || die "--budget $budget: not a number of seconds"
[[ -z $backend || $backend == cpu || $backend == gpu ]] || die "--backend $backend: cpu or gpu"
[[ -f $chunks_file ]] || die "no chunk table $chunks_file"
[[ -x $TOPKP ]] || die "no topkp binary at $TOPKP (make, or TOPKP=...)"

# The chunk table: arrays indexed by chunk number (its line among the non-comment lines).
names=() files=() configs=() sweeps=() algos=() ests=() needs=()
while IFS=$'\t' read -r n f c s a e d; do
    [[ -z $n || $n == \#* ]] && continue
    names+=("$n") files+=("$f") configs+=("$c") sweeps+=("$s") algos+=("$a") ests+=("$e") needs+=("$d")
done < "$chunks_file"

# The backend: --backend, else the GPU when the binary has CUDA and a GPU answers.
if [[ -z $backend ]]; then
    backend=cpu
    if "$TOPKP" list 2>/dev/null | grep -m1 -o 'backends=[a-z,]*' | grep -q gpu &&
        nvidia-smi -L >/dev/null 2>&1; then
        backend=gpu
    fi
fi

case ${multi[0]:-}/$backend in
    --gpus/cpu) die "--gpus needs the GPU backend (here: cpu)" ;;
    --workers/gpu) die "--workers is for the CPU backend (here: gpu): --gpus" ;;
esac

if ((list)); then
    printf 'chunk\tfile\tsweeps\talgos\tgpu_s\tneeds\n'
    total=0
    for i in "${!names[@]}"; do
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "${names[$i]}" "${files[$i]}" "${sweeps[$i]}" \
            "${algos[$i]}" "${ests[$i]}" "${needs[$i]}"
        total=$((total + ests[i]))
    done
    echo "# $total s estimated on one H200 (backend here: $backend)"
    exit 0
fi

# Provenance: the binary's commit, its sha256, the device.
commit=$("$TOPKP" --version | sed -n 's/.*(commit \(.*\)).*/\1/p')
binsha=$(sha256sum "$TOPKP" | cut -d' ' -f1)
if [[ $backend == gpu ]]; then
    device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
    slug=$(echo "$device" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '\n' | grep -m1 -E '^[a-z]+[0-9]+[a-z]*$')
    slug=${slug:-gpu}
else
    device=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
    slug=cpu
fi
out=${out:-${RESULTS_ROOT:-results}/$slug-$(date -u +%F)}

# The tree of every file git does not ignore (tracked or not), as a commit would record it:
# through a throw-away index seeded from HEAD, so that the repository's own is left alone and a
# file keeps HEAD's mode where the copy lost it (core.fileMode off); contents, added and
# removed files all count.
worktree_tree() {
    local idx rc
    idx=$(mktemp) && rm -f "$idx"
    GIT_INDEX_FILE=$idx git read-tree HEAD >/dev/null 2>&1 &&
        GIT_INDEX_FILE=$idx git -c core.fileMode=false add -A . >/dev/null 2>&1 &&
        GIT_INDEX_FILE=$idx git write-tree
    rc=$?
    rm -f "$idx"
    return $rc
}

# Is the tree here the source of a bundled binary? Its SOURCE file (scripts/bundle.sh) names
# the commit and that commit's tree; a copy of the tree whose .git is older than the binary
# (a GPU machine's) matches by content.
matches_bundle_source() {
    local src want
    src=$(dirname "$TOPKP")/SOURCE
    [[ -f $src ]] && grep -qx $'clean\tyes' "$src" || return 1
    [[ $(awk -F'\t' '$1 == "commit" { print $2 }' "$src") == "$commit"* ]] || return 1
    want=$(awk -F'\t' '$1 == "tree" { print $2 }' "$src")
    [[ -n $want && $(worktree_tree) == "$want" ]] || return 1
    echo "the tree's content is that of $commit (tree $want), the bundle's source"
}

# One commit: a clean tree (tracked files) and a binary built from it.
if ((!allow_dirty)); then
    if git rev-parse --git-dir >/dev/null 2>&1; then
        # a tree copied to another machine keeps its index's stale stat data (and may lose
        # the files' modes): refresh it, and compare contents only
        git update-index -q --refresh >/dev/null 2>&1 || true
        head=$(git rev-parse --short=12 HEAD)
        changed=$(git -c core.fileMode=false status --porcelain --untracked-files=no)
        if [[ -n $changed || $commit != "$head" ]] && ! matches_bundle_source; then
            [[ -z $changed ]] ||
                die "the tree has uncommitted changes (git status): commit them or pass --allow-dirty"
            die "$TOPKP was built at $commit but the tree is at $head: rebuild (make) or pass --allow-dirty"
        fi
    fi
    [[ $commit != *+dirty* && -n $commit ]] ||
        die "$TOPKP was built from a dirty tree ($commit): commit, rebuild, or pass --allow-dirty"
fi
# The chunks to run: --chunk names or numbers (1-based), else all not yet ok.
todo=()
if ((${#wanted[@]})); then
    for w in "${wanted[@]}"; do
        found=""
        for i in "${!names[@]}"; do
            [[ ${names[$i]} == "$w" || $((i + 1)) == "$w" ]] && found=$i
        done
        [[ -n $found ]] || die "--chunk $w: no such chunk in $chunks_file (--list-chunks)"
        todo+=("$found")
    done
fi

mkdir -p "$out/logs" || die "cannot create $out"
tsv=$out/campaign.tsv
header=$'file\tsweep\tcommit\tbinary_sha256\tdevice\tbackend\tstart\tend\tstatus\tchunk'
[[ -f $tsv ]] || echo "$header" > "$tsv"
other=$(awk -F'\t' -v s="$binsha" 'NR > 1 && $4 != s { print $3 " (" $4 ")"; exit }' "$tsv")
if [[ -n $other ]]; then
    die "$tsv holds chunks of another binary, $other; this is $commit ($binsha): use another --out"
fi

real=$(compgen -G "$REAL_GLOB" | head -1)
now() { date -u +%FT%TZ; }

# Signals (docs/ROBUSTNESS.md, "Signals"): SIGINT, SIGTERM or SIGHUP pass to the running chunk
# (its `topkp run` keeps every finished cell: the next call resumes it), then end this script by
# the same signal; a second ends it at once. Files this script writes go through a temporary
# renamed into place, so none is left half-written under its name.
child="" partial="" # the running child; the temporary being written
on_signal() {
    trap - INT TERM HUP
    if [[ -n $child ]]; then kill -"$1" "$child" 2>/dev/null; wait "$child"; fi
    rm -f "$tsv.tmp" ${partial:+"$partial"}
    kill -"$1" $$
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT
trap 'on_signal HUP' HUP
# waited CMD...: run it as a child this script waits for (a signal then reaches on_signal at
# once); its exit status. TKP_PAUSE_AT=chunk-running signals this script there (the tests).
waited() {
    "$@" &
    child=$!
    [[ ${TKP_PAUSE_AT:-} == chunk-running ]] && kill -"${TKP_PAUSE_SIGNAL:-TERM}" $$
    wait "$child"
    local rc=$?
    child=""
    return $rc
}
# record CHUNK STATUS START: replace the chunk's line of campaign.tsv.
record() {
    local i=$1 line
    line=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "${files[$i]}" "${sweeps[$i]}" "$commit" \
        "$binsha" "$device" "$backend" "$3" "$(now)" "$2" "${names[$i]}")
    awk -F'\t' -v c="${names[$i]}" 'NR == 1 || $10 != c' "$tsv" > "$tsv.tmp"
    echo "$line" >> "$tsv.tmp"
    mv "$tsv.tmp" "$tsv"
    echo "$(printf '%-16s' "${names[$i]}") $2"
}
done_ok() { awk -F'\t' -v c="$1" '$10 == c && $9 ~ /^ok/ { f = 1 } END { exit !f }' "$tsv"; }

# plan_algos CONFIG SWEEPS: the modules and peers of those sweeps on this backend, one a line.
plan_algos() {
    "$TOPKP" run "$1" --dry-run --backend "$backend" --sweep "$2" 2>/dev/null | awk -F'\t' 'NR > 1 { print $2 }' | sort -u
}
# chunk_algos I: the comma-separated --only list of chunk I ("" for the whole sweeps).
chunk_algos() {
    local i=$1 j listed=""
    case ${algos[$i]} in
        -) echo ""; return ;;
        \*) for j in "${!names[@]}"; do
                [[ $j != "$i" && ${files[$j]} == "${files[$i]}" && ${sweeps[$j]} == "${sweeps[$i]}" &&
                   ${algos[$j]} != - && ${algos[$j]} != \* ]] && listed+="${algos[$j]},"
            done
            plan_algos "${configs[$i]}" "${sweeps[$i]}" | grep -vxF -f <(tr ',' '\n' <<< "$listed" | grep .) | paste -sd, ;;
        *) plan_algos "${configs[$i]}" "${sweeps[$i]}" | grep -xF -f <(tr ',' '\n' <<< "${algos[$i]}") | paste -sd, ;;
    esac
}
# unimportable FILE SWEEPS ALGOS: the peers of those cells that could not be imported here.
unimportable() {
    local s
    for s in ${2//,/ }; do
        "$TOPKP" export "$1" --sweep "$s" 2>/dev/null | awk -F'\t' -v only=",$3," '
            NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
            $(c["status"]) == "unsupported" && $(c["message"]) ~ /cannot be imported/ &&
            (only == ",," || index(only, "," $(c["algo"]) ",")) { print $(c["algo"]) }'
    done | sort -u | paste -sd' '
}

# run_chunk I CAP: run chunk I for at most CAP seconds and record it.
run_chunk() {
    local i=$1 cap=$2 start rc only="" log
    log=$out/logs/${names[$i]}.log
    start=$(now)
    if [[ ${needs[$i]} == gpu && $backend != gpu ]]; then
        record "$i" "missing: GPU only (backend $backend)" "$start"; return
    fi
    if [[ ${needs[$i]} == real && -z $real ]]; then
        record "$i" "missing: no real-model logits file ($REAL_GLOB): $REAL_TARGET writes it" "$start"; return
    fi
    if [[ ${configs[$i]} == - ]]; then # the GPU tests
        local tests; tests=$(dirname "$TOPKP")/topkp-tests
        [[ -x $tests ]] || { record "$i" "missing: no $tests" "$start"; return; }
        partial=$out/${files[$i]}.partial
        waited env TOPKP="$TOPKP" timeout "$cap" "$tests" gpu_ > "$partial" 2>&1
        rc=$?
        mv "$partial" "$out/${files[$i]}"
        partial=""
        local summary; summary=$(grep -m1 -E '^[0-9]+ passed, [0-9]+ failed' "$out/${files[$i]}")
        if [[ -n $summary ]]; then record "$i" "ok; $summary" "$start"
        else record "$i" "missing: topkp-tests stopped (exit $rc) before its summary" "$start"; fi
        return
    fi
    [[ -f ${configs[$i]} ]] || { record "$i" "missing: no config ${configs[$i]} in this tree" "$start"; return; }
    local sweep=${sweeps[$i]}
    if ((${#multi[@]})); then # one sharded run per file: its shard files take one plan only
        local j first=-1
        for j in "${!names[@]}"; do
            [[ ${files[$j]} == "${files[$i]}" ]] && ((first < 0)) && first=$j
        done
        if ((first != i)); then
            local st; st=$(awk -F'\t' -v c="${names[$first]}" '$10 == c { print $9 }' "$tsv")
            record "$i" "${st:-missing: chunk ${names[$first]} not run}; run with chunk ${names[$first]} (${multi[0]})" "$start"
            return
        fi
        sweep=$(for j in "${!names[@]}"; do
            [[ ${files[$j]} == "${files[$i]}" && ( ${needs[$j]} != real || -n $real ) &&
               ( ${needs[$j]} != gpu || $backend == gpu ) ]] && echo "${sweeps[$j]}"
        done | tr ',' '\n' | awk '!seen[$0]++' | paste -sd,)
    else
        only=$(chunk_algos "$i")
    fi
    if [[ ${algos[$i]} != - && -z $only && ${#multi[@]} == 0 ]]; then
        local what=${algos[$i]}
        [[ $what == \* ]] && what="the sweep's other modules and peers"
        record "$i" "ok; no cells of $what on backend $backend" "$start"; return
    fi
    waited timeout "$cap" "$TOPKP" run "${configs[$i]}" -o "$out/${files[$i]}" --resume \
        --backend "$backend" --sweep "$sweep" ${only:+--only "$only"} "${multi[@]}" > "$log" 2>&1
    rc=$?
    if ((rc == 124)); then
        record "$i" "missing: stopped after $cap s (run again: it resumes)" "$start"
    elif ((rc != 0)); then
        record "$i" "missing: topkp run exit $rc: $(tail -1 "$log" | cut -c1-200 | tr '\t' ' ')" "$start"
    else
        local note; note=$(unimportable "$out/${files[$i]}" "$sweep" "$only")
        record "$i" "ok${note:+; cannot be imported here: $note}" "$start"
    fi
}

if ((!${#wanted[@]})); then
    for i in "${!names[@]}"; do done_ok "${names[$i]}" || todo+=("$i"); done
fi
echo "campaign $out: $commit, $backend ($device), ${#todo[@]} chunks to run"
t0=$SECONDS
for i in "${todo[@]}"; do
    cap=570
    if ((budget)); then
        left=$((budget - (SECONDS - t0)))
        if ((left <= 0 || left < ests[i] * 23 / 20)); then
            echo "budget: ${names[$i]} (about ${ests[$i]} s) does not fit the $left s left: next call"
            continue
        fi
        ((left < cap)) && cap=$left
    fi
    run_chunk "$i" "$cap"
done

if [[ -n $real ]]; then # the real-model logits' provenance
    partial=$out/real_logits.tsv.tmp
    { printf 'path\t%s\nsha256\t%s\n' "$real" "$(sha256sum "$real" | cut -d' ' -f1)"
      # its attributes where h5dump is present (the GPU machine has none): path and sha256 suffice
      { h5dump -A -g / "$real" 2>/dev/null | awk '/ATTRIBUTE "/ { split($0, a, "\""); n = a[2] }
          /\(0\):/ && n != "" { sub(/.*\(0\): */, ""); print n "\t" $0; n = "" }'; } || true
    } > "$partial" && mv "$partial" "$out/real_logits.tsv"
    partial=""
fi

pending=$(for i in "${!names[@]}"; do done_ok "${names[$i]}" || echo "${names[$i]}"; done | paste -sd' ')
# every chunk of the table not ok, a chunk the budget put off (no line yet) included
echo "campaign $out: $(awk 'NR > 1' "$tsv" | wc -l) chunks recorded; not ok: ${pending:-none}"
if ((paper)) && ((!budget)); then
    if command -v pdflatex >/dev/null; then
        # the report and its claims table travel with the folder they were built from
        if waited make paper RESULTS="$out"; then
            for f in report.pdf claims.tsv; do
                partial=$out/$f.partial
                cp "paper/out/$f" "$partial" && mv "$partial" "$out/$f"
            done
            partial=""
            echo "reproduce.sh: $out/report.pdf and $out/claims.tsv"
        else
            echo "reproduce.sh: make paper RESULTS=$out failed" >&2
        fi
    else
        echo "no TeX here: on a machine with TeX (or network for apt), make paper RESULTS=$out"
    fi
fi
