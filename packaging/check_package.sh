#!/usr/bin/env bash
# check_package.sh DEB: make check-package's checks of the Debian package make package built.
# lintian must report no error (its warnings and notes are printed); the package, unpacked with
# dpkg-deb -x into a temporary root, must run from there: --version, trace, vit on the packaged demo
# and sample, and the app headless from the menu entry's Exec lines.
set -euo pipefail
deb=$1
[ -f "$deb" ] || { echo "check-package: $deb: no such package (run make package)"; exit 2; }
echo "== lintian $(basename "$deb")"
lintian_out=$(lintian --display-info "$deb" 2>&1) || true
printf '%s\n' "${lintian_out:-(no tags)}"
if printf '%s\n' "$lintian_out" | grep -q '^E: '; then
    echo "check-package: lintian reports errors"
    exit 1
fi
echo "== dpkg-deb -c"
dpkg-deb -c "$deb" | awk '{ print $1, $6 }'
root=$(mktemp -d /tmp/attnscope-package.XXXXXX)
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "$deb" "$root"
mkdir -p "$root/elsewhere" "$root/home"
cd "$root/elsewhere"
export HOME=$root/home XDG_CONFIG_HOME=$root/home/.config PATH="$root/usr/bin:$PATH"
echo "== from $root"
attnscope --version
attnscope trace | tail -1
attnscope vit --model "$root/usr/share/attnscope/models/demo_vit.safetensors" \
    --image "$root/usr/share/attnscope/samples/06_triangle.png" | grep -i triangle
i=0
grep '^Exec=' "$root/usr/share/applications/attnscope.desktop" | sed 's/^Exec=//; s/ %f//' | while read -r line; do
    # shellcheck disable=SC2086  # the Exec line's words
    xvfb-run -a -s "-screen 0 1600x1000x24" $line --screenshot "$root/exec_$i.png" --size 1600x1000
    [ "$(stat -c %s "$root/exec_$i.png")" -gt 20000 ] || { echo "check-package: $line rendered nothing"; exit 1; }
    echo "ok: $line (the menu entry's Exec line) --screenshot"
    i=$((i + 1))
done
desktop-file-validate "$root/usr/share/applications/attnscope.desktop"
man -l "$root/usr/share/man/man1/attnscope.1.gz" > /dev/null
echo "check-package: PASS ($deb)"
