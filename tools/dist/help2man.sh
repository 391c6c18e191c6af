#!/bin/sh
# help2man.sh - turn a program's --help text (standard input) into a manual
# page (standard output), so that the page cannot drift from --help: the
# Makefile builds sluice(1) with it from `sluice --help` at every build.
#
#   help2man.sh NAME SECTION 'one-line description' < help.txt > NAME.SECTION
#
# The help's first line is the synopsis; the paragraph after it the
# description; every line at column 0 ending in ':' starts a section (its
# title upper-cased); everything else is kept as written (no-fill), with
# roff's special characters escaped.
name=$1 section=$2 what=$3
awk -v name="$name" -v section="$section" -v what="$what" '
function esc(s) {
    gsub(/\\/, "\\e", s)
    gsub(/-/, "\\-", s)
    if (s ~ /^[.\047]/) s = "\\&" s
    return s
}
BEGIN {
    printf ".\\\" Generated from %s --help by tools/dist/help2man.sh: do not edit.\n", name
    printf ".TH %s %s \"\" \"Sluice 1.0.0\" \"User Commands\"\n", toupper(name), section
    printf ".SH NAME\n%s \\- %s\n", name, esc(what)
    state = "synopsis"
}
NR == 1 { sub(/^[Uu]sage: */, ""); printf ".SH SYNOPSIS\n.nf\n%s\n.fi\n.SH DESCRIPTION\n.nf\n", esc($0); next }
/^[A-Z][^ ].*:$/ && $0 !~ /^ / {
    t = $0; sub(/:$/, "", t); sub(/ *\(.*$/, "", t)
    printf ".fi\n.SH %s\n.nf\n", toupper(t)
    if ($0 ~ /\(/) { n = $0; sub(/^[^(]*/, "", n); sub(/:$/, "", n); printf "%s\n", esc(n) }
    next
}
{ print esc($0) }
END {
    printf ".fi\n.SH SEE ALSO\n.BR sluiced (8)\n"
}'
