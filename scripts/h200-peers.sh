#!/usr/bin/env bash
# h200-peers.sh OUTDIR STAGE... [BUNDLE via $BUNDLE] — on the GPU machine, the peer runs that
# back the committed H200 results (docs/PEERS.md): installs the carried peers kit
# (scripts/gpu-peers.sh), records `topkp list`, then runs each STAGE, a config name with a time
# cap in seconds (configs/NAME.lua:SECONDS), into OUTDIR/<basename>.h5 with its log. A stage cut
# short by its cap keeps every finished cell; run it again with RESUME=1 to go on.
set -uo pipefail
out=${1:?usage: h200-peers.sh OUTDIR CONFIG:SECONDS...}
shift
bundle=${BUNDLE:-build/gpu}
source scripts/gpu-peers.sh .peers-kit || exit 1
"$bundle/topkp" list > "$out/list.txt" 2>&1
awk '/^peers:/ { on = 1; next } /^[a-z]/ { on = 0 } on && /^  [a-z]/ { name = $1 }
     on && /importable here:/ { print name ": " substr($0, index($0, ":") + 2) }' "$out/list.txt"
for spec in "$@"; do
    config=${spec%:*}
    name=$(basename "$config")
    flags=()
    [ -n "${RESUME:-}" ] && [ -f "$out/$name.h5" ] && flags=(--resume)
    t0=$SECONDS
    timeout "${spec#*:}" "$bundle/topkp" run "configs/$config.lua" -o "$out/$name.h5" --backend gpu \
        "${flags[@]}" > "$out/$name.log" 2>&1
    echo "$name: exit $? after $((SECONDS - t0)) s, $(grep -c '^\[' "$out/$name.log") cells"
done
