#!/usr/bin/env bash
# completion_test.sh BIN_DIR COMPLETION_FILE: what bash completes after "attnscope v", "attnscope vit --mo"
# and "attnscope --lang " (bash-completion's own functions, attnscope's from BIN_DIR/attnscope --help).
set -u
export PATH="$1:$PATH"
source /usr/share/bash-completion/bash_completion
source "$2"
status=0
expect() {  # expect WORD LINE...: completing LINE offers WORD
    local want=$1
    shift
    COMP_WORDS=("$@")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE="$*"
    COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    _attnscope
    if printf '%s\n' "${COMPREPLY[@]}" | grep -qx -- "$want"; then
        echo "ok: '$*' offers $want"
    else
        echo "FAIL: '$*' offers [${COMPREPLY[*]}], not $want"
        status=1
    fi
}
expect vit attnscope v
expect handout attnscope h
expect --model attnscope vit --mo
expect --demo-vit attnscope --demo
expect --dump attnscope run --du
expect zh attnscope --lang ""
exit $status
