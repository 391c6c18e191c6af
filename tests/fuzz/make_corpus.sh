#!/bin/sh
# make_corpus.sh - regenerate tests/fuzz/corpus/ and tests/fuzz/proto.dict from the
# model in proto/proto.h. Run it after changing PROTO_FIELDS or PROTO_MSGS and
# commit the result; the output is deterministic.
set -eu
cd "$(dirname "$0")/../.."
mkdir -p build/fuzz tests/fuzz/corpus
${CC:-cc} -std=c11 -Wall -Wextra -Werror -Wmissing-prototypes -Wshadow -D_GNU_SOURCE -Iproto \
  $(pkg-config --cflags msgpack) tests/fuzz/make_corpus.c proto/*.c \
  $(pkg-config --libs msgpack) -o build/fuzz/make_corpus
rm -f tests/fuzz/corpus/*
build/fuzz/make_corpus tests/fuzz/corpus tests/fuzz/proto.dict
echo "make_corpus: $(ls tests/fuzz/corpus | wc -l) seeds in tests/fuzz/corpus, dictionary tests/fuzz/proto.dict"
