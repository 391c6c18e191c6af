#!/bin/sh
# circles.sh - fail on a circle among the broker's modules (make circles).
#
# The graph: a module is x.c with x.h, and the files named x_*.c and x_*.h
# that split it (store_msg.c, store_aux.c and the private store_int.h are
# the store); an edge x -> y for every file of x that includes "y.h" or
# "y_*.h" where that header is in broker/. The broker object's header, bk.h, may be
# included by every module: edges into bk are ignored, bk.c's own edges
# count. A depth-first search prints every circle it closes (each back edge
# gives one), one per line as "a -> b -> ... -> a", and the script exits 1
# when there is any. Usage: tools/circles.sh [DIR] (default broker).
dir=${1:-broker}
for c in "$dir"/*.[ch]; do
    x=$(basename "$c"); x=${x%.?}; x=${x%%_*}
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)\.h".*/\1/p' "$c" |
    while read -r h; do
        y=${h%%_*}
        [ "$y" != "$x" ] && [ "$y" != bk ] && [ -f "$dir/$h.h" ] && echo "$x $y"
    done
done | sort -u | awk '
{ n[$1]++; to[$1, n[$1]] = $2; node[$1] = 1; node[$2] = 1 }
function visit(v,    i, w, k, path) {
    state[v] = 1; stack[++depth] = v
    for (i = 1; i <= n[v]; i++) {
        w = to[v, i]
        if (state[w] == 1) {
            path = w
            for (k = depth; k >= 1 && stack[k] != w; k--) ;
            for (k = k + 1; k <= depth; k++) path = path " -> " stack[k]
            print "circle: " path " -> " w
            found++
        } else if (!state[w])
            visit(w)
    }
    depth--; state[v] = 2
}
END {
    for (v in node) if (!state[v]) visit(v)
    if (found) { print "circles: " found " among the modules of '"$dir"'/"; exit 1 }
}'
