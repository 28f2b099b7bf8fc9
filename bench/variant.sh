#!/usr/bin/env bash
# Builds the library of a revision (or of the working tree) for sm_90a into .gpu/var/lib_NAME.so,
# for bench/ab.sh on the GPU machine (carry .gpu/var):
#   bench/variant.sh NAME [REV]     REV: a commit or branch; default the working tree as it is
# TESTS="backends ..." also builds those Rust test binaries into .gpu/var/tests_NAME/ (they link
# the crate itself: EVS_LIBRARY does not change what a test binary runs). Run them with
# EVS_TEST_DEVICE=cuda (and EVS_TEST_POISON_SCRATCH=1): without it they test the CPU backend.
# Prints what ptxas said that costs speed: kernels with a stack frame or spills, and wgmma
# serialization (C7520, which made one bsrmm variant 17 % slower: bench/NOTES.md).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: bench/variant.sh NAME [REV]}
rev=${2:-}
src=$(mktemp -d "/tmp/evs_variant_${name}_XXXX")
trap 'rm -rf "$src"' EXIT
if [ -n "$rev" ]; then
    git archive "$rev" | tar -x -C "$src"
else
    git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} cp --parents {} "$src/"
fi
ln -s "$PWD/.tools" "$src/.tools"
target=/tmp/evs_variant_target_$name
(cd "$src" && EVS_CUDA_ARCHS=90a CARGO_TARGET_DIR=$target EVS_REQUIRE_CUDA=1 cargo build --release --quiet)
mkdir -p .gpu/var
strip --strip-unneeded -o ".gpu/var/lib_$name.so" "$target/release/libevsparse.so"
report=$(ls -t "$target"/release/build/evsparse-*/out/ptxas-report.txt | head -n 1)
awk '/Compiling entry function/ { fn = $7 }
     /bytes stack frame/ && ($1 > 0 || $5 > 0) { print "  " fn ": " $0 }' "$report" | sort -u
grep -h "C7520" "$report" | sed 's/^/  /' || true
echo ".gpu/var/lib_$name.so ($(du -h ".gpu/var/lib_$name.so" | cut -f1))"
if [ -n "${TESTS:-}" ]; then
    mkdir -p ".gpu/var/tests_$name"
    (cd "$src" && EVS_CUDA_ARCHS=90a CARGO_TARGET_DIR=$target EVS_REQUIRE_CUDA=1 cargo test --release --no-run \
        --message-format=json $(printf -- '--test %s ' $TESTS)) |
        python3 -c 'import json, sys; [print(m["target"]["name"], m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable")]' |
        while read -r test exe; do strip --strip-debug -o ".gpu/var/tests_$name/$test" "$exe"; done
    ls ".gpu/var/tests_$name"
fi
