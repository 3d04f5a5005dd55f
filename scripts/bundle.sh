#!/usr/bin/env bash
# bundle.sh OBJDIR DEST — copy the topkp binary and the test runner built in OBJDIR, plus
# every shared library they need (ldd, minus the C library and the loader, which the GPU
# machine has), into DEST with an rpath of $ORIGIN/lib, so that copying DEST is enough.
set -euo pipefail
obj=${1:?usage: bundle.sh OBJDIR DEST}
dest=${2:?usage: bundle.sh OBJDIR DEST}
rm -rf "$dest"
mkdir -p "$dest/lib"
for bin in topkp topkp-tests; do
    cp "$obj/$bin" "$dest/$bin"
    ldd "$obj/$bin" | awk '/=> \// { print $3 }' | while read -r lib; do
        case "$(basename "$lib")" in
            libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libresolv.so*) ;;
            *) cp -L "$lib" "$dest/lib/" ;;
        esac
    done
done
command -v patchelf >/dev/null || { echo "bundle.sh: patchelf is needed (make deps)" >&2; exit 1; }
for bin in topkp topkp-tests; do
    patchelf --set-rpath '$ORIGIN/lib' "$dest/$bin"
done
for lib in "$dest"/lib/*; do
    patchelf --set-rpath '$ORIGIN' "$lib"
done
# The source the binary was built from: its commit and that commit's tree (the content of
# every tracked file), so that a copy of the tree whose .git is older than the binary (the
# GPU machine's) can still be matched to it (reproduce.sh, docs/CAMPAIGN.md "On a GPU machine").
if git rev-parse --git-dir >/dev/null 2>&1; then
    clean=yes
    [[ -z $(git status --porcelain --untracked-files=no) ]] || clean=no
    printf 'commit\t%s\ntree\t%s\nclean\t%s\n' "$(git rev-parse HEAD)" "$(git rev-parse 'HEAD^{tree}')" \
        "$clean" > "$dest/SOURCE"
fi
echo "bundled $(ls "$dest/lib" | wc -l) libraries into $dest ($(du -sh "$dest" | cut -f1))"
