#!/bin/sh
# tests/i18n/check_catalogue.sh SOURCE_DIR [PO]: every translatable string of the app's sources
# (po/make_pot.sh: xgettext over _(), tr_in, N_, NC_) has a Chinese in PO (po/zh_CN.po): msgfmt
# --check (headers, printf formats alike in both languages) and --statistics report every message
# translated, none fuzzy and none untranslated, and the .po keeps no translation of a string that is
# gone. Without PO: the real catalogue, then the same check on a copy with one translation
# removed, which must fail (the check can fail).
set -u
src=$1
po=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check PO: 0 when complete, 1 with the reasons on stdout
    "$src/po/make_pot.sh" "$src" "$tmp/attnscope.pot" || { echo "xgettext failed"; return 1; }
    msgmerge --quiet --no-fuzzy-matching "$1" "$tmp/attnscope.pot" -o "$tmp/merged.po" || { echo "msgmerge failed"; return 1; }
    stats=$(msgfmt --check --statistics -o /dev/null "$tmp/merged.po" 2>&1) || { echo "$stats"; return 1; }
    echo "$(basename "$1"): $stats"
    ok=0
    case $stats in *untranslated*|*fuzzy*) ok=1 ;; esac
    case $stats in *" translated message"*) ;; *) ok=1 ;; esac
    missing=$(msgattrib --untranslated --no-obsolete --no-wrap "$tmp/merged.po" | grep -c '^msgid ' || true)
    fuzzy=$(msgattrib --only-fuzzy --no-obsolete --no-wrap "$tmp/merged.po" | grep -c '^msgid ' || true)
    obsolete=$(grep -c '^#~ msgid' "$tmp/merged.po" || true)
    if [ "$missing" -gt 0 ] || [ "$fuzzy" -gt 0 ]; then
        echo "without a Chinese (run make update-po, then translate each):"
        msgattrib --untranslated --no-obsolete --no-wrap "$tmp/merged.po" | grep -A1 '^msgctxt\|^msgid ' | grep -v '^msgstr\|^--'
        msgattrib --only-fuzzy --no-obsolete --no-wrap "$tmp/merged.po" | grep '^msgid '
        ok=1
    fi
    if [ "$obsolete" -gt 0 ]; then
        echo "translations of strings no source has any more (make update-po drops them):"
        grep '^#~ msgid' "$tmp/merged.po"
        ok=1
    fi
    return $ok
}

if [ -n "$po" ]; then check "$po"; exit $?; fi
check "$src/po/zh_CN.po" || exit 1
# The same check must fail on a catalogue that lacks one translation.
awk 'done != 1 && /^msgstr "[^"]/ { print "msgstr \"\""; done = 1; next } { print }' "$src/po/zh_CN.po" > "$tmp/lacking.po"
if check "$tmp/lacking.po" > "$tmp/lacking.out"; then
    echo "the check passed a catalogue with one translation removed:"; cat "$tmp/lacking.out"; exit 1
fi
grep -q "without a Chinese" "$tmp/lacking.out" || { echo "the missing translation was not named:"; cat "$tmp/lacking.out"; exit 1; }
echo "a catalogue with one translation removed fails, naming it"
