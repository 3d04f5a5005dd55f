#!/usr/bin/env bash
# install-tex.sh — apt-get installs only the TeX packages that paper/report.tex needs and that
# are missing (pdflatex, graphicx, booktabs, longtable). Quick when everything is present.
set -euo pipefail
want=(texlive-latex-base texlive-latex-recommended)
missing=()
for pkg in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get -o DPkg::Lock::Timeout=900 update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}"
