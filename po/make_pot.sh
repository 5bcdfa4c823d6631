#!/bin/sh
# po/make_pot.sh SOURCE_DIR OUT.pot: every translatable string by xgettext: in app/, the arguments of
# _() and tr_in(language, ...) and the literals marked N_("...") or NC_("context", "..."); core's
# message templates, ATTNSCOPE_MESSAGE(code, "...") in core/tensor/messages.inc.
set -eu
src=$1
out=$2
cd "$src"
find app core/tensor/messages.inc -name '*.cpp' -o -name '*.hpp' -o -name '*.inc' | LC_ALL=C sort > "$out.files"
xgettext --language=C++ --from-code=UTF-8 --keyword= --keyword=_ --keyword=tr_in:2 --keyword=N_ \
         --keyword=NC_:1c,2 --keyword=ATTNSCOPE_MESSAGE:2 --add-location=file --sort-by-file --package-name=attnscope \
         --msgid-bugs-address=none --files-from="$out.files" --output="$out"
rm -f "$out.files"
