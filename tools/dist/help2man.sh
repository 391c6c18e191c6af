#!/bin/sh
# help2man.sh - a manual page from a program's --help and --version, so that
# the page cannot drift from them: the Makefile builds sluice(1),
# sluice-bench(1) and sluice-sink(1) with it at every build.
#
#   help2man.sh PROGRAM SECTION 'one-line description' [HELP ARGS] > NAME.SECTION
#
# PROGRAM is run with HELP ARGS (default --help; `sluice help --all` for
# sluice, whose --help is a short overview) and --version (the version is
# the second word of its first line). The page is set in fill mode, so that it fits any
# terminal width; the help's layout says what each line is:
#
#   - the first line ("usage: NAME ...") and the lines after it up to a blank
#     line are the SYNOPSIS; the text after them, up to the first heading,
#     the DESCRIPTION;
#   - a heading is a line at column 0, after a blank line, ending in ':' with
#     no other ': ' in it ("Options:", "Global options (...):"): a section,
#     its title upper-cased, its parenthesis the section's first paragraph;
#     a paragraph at column 0 that opens with one or two words and a colon
#     ("Exit status: 0 after ...") is a section too;
#   - an indented line "TAG  TEXT" (two spaces or more between them), or an
#     option alone on its line with its text indented below, is an entry of
#     a list (.TP): the lines below it at its text's column continue it, and
#     deeper lines nest inside it;
#   - an indented line that starts with NAME and a word ("  sluice send
#     [-p LEVEL]") is a command: lines below it starting with '[' continue
#     its synopsis, deeper lines are its description;
#   - in a section titled Examples, each indented line is a command line,
#     with its comment after two spaces or more;
#   - anything else is text, filled into a paragraph; a blank line ends one.
#
# The SEE ALSO section names the other pages of Sluice.
prog=$1 section=$2 what=$3 help_args=${4:---help}
if [ $# -lt 3 ] || [ $# -gt 4 ] || [ ! -x "$prog" ]; then
    echo "usage: help2man.sh PROGRAM SECTION 'one-line description' [HELP ARGS]" >&2
    exit 2
fi
name=${prog##*/}
# shellcheck disable=SC2086 # HELP ARGS are words
help=$("$prog" $help_args) || { echo "help2man.sh: $prog $help_args failed" >&2; exit 1; }
version=$("$prog" --version | awk 'NR == 1 { print $2 }')
[ -n "$version" ] || { echo "help2man.sh: $prog --version printed no version" >&2; exit 1; }
printf '%s\n' "$help" | awk -v name="$name" -v helpargs="$help_args" -v section="$section" -v what="$what" -v version="$version" '
# esc escapes text for roff: a backslash, a minus (so that options copy
# and paste), quotes (typewriter quotes, not typographic ones), and a
# leading dot.
function esc(s) {
    gsub(/\\/, "\\e", s)
    gsub(/-/, "\\-", s)
    gsub(/\047/, "\\(aq", s)
    gsub(/`/, "\\(ga", s)
    if (s ~ /^\./) s = "\\&" s
    return s
}
function indent(s) { match(s, /^ */); return RLENGTH }
function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
# gap is the column where an entry text starts after its tag (two spaces
# or more after a tag with single spaces), or 0 when the line is no entry.
function gap(k,    s) {
    s = L[k]
    if (!match(s, /^ *[^ ]+( [^ ]+)*  +[^ ]/)) return 0
    return RLENGTH - 1
}
# alone tells whether line k is a tag alone (options, or a word or two such
# as a path), its text indented below it.
function alone(k) {
    return I[k] > 0 && (T[k] ~ /^-/ || T[k] ~ /^[^ ]+( [^ ]+)?$/) && T[k] !~ /[:.]$/ && !gap(k) && k + 1 < N &&
           T[k + 1] != "" &&
           I[k + 1] > I[k] + 2
}
function iscommand(k) {
    return title != "EXAMPLES" && I[k] > 0 && index(T[k], name " ") == 1 && T[k] ~ ("^" name " [a-z]")
}
# tag formats an entry tag: options bold and their values italic, any
# other tag bold.
function tag(s,    n, w, i, out, t, comma) {
    if (s !~ /^-/) return "\\fB" esc(s) "\\fR"
    n = split(s, w, " ")
    out = ""
    for (i = 1; i <= n; i++) {
        t = w[i]; comma = ""
        if (t ~ /,$/) { comma = ","; sub(/,$/, "", t) }
        out = out (i > 1 ? " " : "") (t ~ /^-/ ? "\\fB" : "\\fI") esc(t) "\\fR" comma
    }
    return out
}
# keep joins the words of each innermost [...] group with unbreakable
# spaces, so that a synopsis wraps between groups only.
function keep(s,    out, i, c, open) {
    out = ""; open = 0
    for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "[") open = !index(substr(s, i + 1), "[") || index(substr(s, i + 1), "]") < index(substr(s, i + 1), "[")
        else if (c == "]") open = 0
        out = out (c == " " && open ? "\\ " : c)
    }
    return out
}
# command formats a command line: the program and its subcommand words
# bold, the rest as it is (kept together by keep, when synopsis is set).
function command(s, synopsis,    n, w, i, head, rest) {
    n = split(s, w, " ")
    head = w[1]
    for (i = 2; i <= n && w[i] ~ /^[a-z][a-z0-9-]*$/; i++) head = head " " w[i]
    rest = ""
    for (; i <= n; i++) rest = rest " " w[i]
    rest = esc(rest)
    return "\\fB" esc(head) "\\fR" (synopsis ? keep(rest) : rest)
}
# items prints lines a .. b-1 (none blank) as roff, in fill mode: entries,
# commands, examples and text, with what is indented deeper nested in
# .RS/.RE. Text after a list (.TP) at its level starts with a .PP, which
# ends the list.
function items(a, b,    k, j, i, c, text, inlist) {
    k = a; inlist = 0
    while (k < b) {
        i = I[k]
        if (title == "EXAMPLES" && i > 0) {
            c = gap(k)
            if (c) {
                print ".TP"; print "\\fB" esc(trim(substr(L[k], 1, c))) "\\fR"
                print esc(substr(L[k], c + 1))
            } else {
                print ".TP"; print "\\fB" esc(T[k]) "\\fR"
            }
            inlist = 1; k++
            continue
        }
        if (iscommand(k)) {
            if (k > a) print ".PP"
            # each synopsis on a line of its own, its continuation hanging
            print ".in +4n"
            while (k < b && iscommand(k) && I[k] == i) {
                text = T[k]; k++
                while (k < b && I[k] > i && T[k] ~ /^[[|]/) { text = text " " T[k]; k++ }
                print ".ti -4n"
                print command(text, 1)
            }
            print ".in"
            for (j = k; j < b && I[j] > i; j++) ;
            if (j > k) { print ".RS"; items(k, j); print ".RE" }
            k = j; inlist = 0
            continue
        }
        c = gap(k)
        if (c || alone(k)) {
            print ".TP"
            if (c) {
                print tag(trim(substr(L[k], 1, c)))
                print esc(substr(L[k], c + 1))
                k++
            } else {
                print tag(T[k]); k++
                c = I[k]
            }
            # the text at column c, and what nests deeper
            while (k < b && I[k] >= c) {
                if (I[k] == c) { print esc(T[k]); k++; continue }
                for (j = k; j < b && I[j] > c; j++) ;
                print ".RS"; print ".RS 4"; items(k, j); print ".RE"; print ".RE"
                # back in the text of the entry: .RE left its indent
                if (j < b && I[j] == c) { print ".PD 0"; print ".IP"; print ".PD" }
                k = j
            }
            inlist = 1
            continue
        }
        # text at indent i, with what nests deeper
        if (inlist) { print ".PP"; inlist = 0 }
        print esc(T[k]); k++
        while (k < b && I[k] >= i) {
            if (I[k] == i && (gap(k) || alone(k) || iscommand(k))) break
            if (I[k] == i) { print esc(T[k]); k++; continue }
            for (j = k; j < b && I[j] > i; j++) ;
            print ".RS 4"; items(k, j); print ".RE"
            k = j
        }
    }
}
function heading(k) {
    return I[k] == 0 && T[k] ~ /^[A-Z].*:$/ && T[k] !~ /: ./ && length(T[k]) <= 72 && (k == 0 || T[k - 1] == "")
}
function newsection(t, paren) {
    title = toupper(t)
    printf ".SH %s\n", title
    if (paren != "") print esc(paren)
}
BEGIN { N = 0 }
{ L[N] = $0; I[N] = indent($0); T[N] = trim($0); N++ }
END {
    printf ".\\\" Generated from %s %s by tools/dist/help2man.sh: do not edit.\n", name, helpargs
    printf ".TH %s %s \"\" \"Sluice %s\" \"User Commands\"\n", toupper(name), section, version
    print ".nh"
    print ".ad l"
    printf ".SH NAME\n%s \\- %s\n", esc(name), esc(what)
    # SYNOPSIS: the usage line and its continuations
    s = T[0]; sub(/^[Uu]sage: */, "", s)
    for (k = 1; k < N && T[k] != ""; k++) s = s " " T[k]
    printf ".SH SYNOPSIS\n.in +4n\n.ti -4n\n%s\n.in\n", command(s, 1)
    title = "DESCRIPTION"
    print ".SH DESCRIPTION"
    first = 1
    while (k < N) {
        if (T[k] == "") { k++; continue }
        if (heading(k)) {
            t = T[k]; sub(/:$/, "", t); paren = ""
            if (t ~ /\(/) { paren = t; sub(/^[^(]*/, "", paren); sub(/ *\(.*$/, "", t) }
            newsection(t, paren)
            first = (paren == ""); k++
            continue
        }
        # a paragraph: up to the next blank line
        for (j = k; j < N && T[j] != ""; j++) ;
        # a paragraph at column 0 opening with "Word word: " is a section
        if (I[k] == 0) {
            joined = T[k]
            for (m = k + 1; m < j && I[m] == 0; m++) joined = joined " " T[m]
            if (match(joined, /^[A-Z][a-z]+( [a-z]+)?( \([^)]*\))?: /) && (k == 0 || T[k - 1] == "")) {
                t = substr(joined, 1, RLENGTH - 2); paren = ""
                if (t ~ /\(/) { paren = t; sub(/^[^(]*/, "", paren); sub(/ *\(.*$/, "", t) }
                newsection(t, paren)
                if (paren != "") print ".PP"
                # the column-0 lines become one line of text, without the label
                rest = substr(joined, RLENGTH + 1)
                k = m - 1
                # a sentence starts with a capital, a command as it is
                if (rest ~ /^[a-z]+[ ,;]/) rest = toupper(substr(rest, 1, 1)) substr(rest, 2)
                T[k] = L[k] = rest; I[k] = 0
                first = 1
            }
        }
        if (!first) print ".PP"
        items(k, j)
        first = 0
        k = j
    }
    print ".SH SEE ALSO"
    n = split("sluice 1 sluice-bench 1 sluice-sink 1 sluice.conf 5 sluiced 8", see, " ")
    out = ""
    for (i = 1; i < n; i += 2)
        if (see[i] != name) out = out (out == "" ? "" : ",\n") ".BR " esc(see[i]) " (" see[i + 1] ")"
    print out
}'
