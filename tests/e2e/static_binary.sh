#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# build/memtrace is one deployable file: it needs no libbpf, libelf, libdw,
# libzstd or libz on the host (the BPF object is embedded by the skeleton).
# Proof: record inside a root directory that holds only memtrace and a
# statically linked target, with /proc and /sys bind-mounted (BTF, the
# uprobe PMU) and nothing else: no libraries, no /dev, no /tmp. The target
# has malloc inside the executable itself, so this also checks that memtrace
# probes the executable when it is the file that defines malloc. The mounts
# live in a private mount namespace (unshare), so they vanish with it and the
# host never sees them.
source "$(dirname "$0")/lib.sh"
plan 13

root=$TMP/root
src=$TMP/static_target.c
trace=$root/out.mtrace
json=$TMP/static.json

cleanup() {
	# Only reachable if unshare leaked a mount: never rm -rf through /proc or /sys.
	if findmnt -rn -o TARGET | grep -q "^$root/"; then
		umount -R -l "$root/proc" "$root/sys" 2>/dev/null
	fi
	findmnt -rn -o TARGET | grep -q "^$root/" || rm -rf "$TMP"
}
trap cleanup EXIT

# 1. No shared library of the ones the host may lack.
needed=$(readelf -d "$MEMTRACE" 2>/dev/null | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
bad=""
for lib in libbpf libelf libdw libzstd libz libbz2 liblzma libiberty; do
	case " $needed" in *" $lib.so"*) bad="$bad $lib" ;; esac
done
if [ -z "$bad" ]; then
	ok "memtrace needs none of libbpf/libelf/libdw/libzstd/libz (DT_NEEDED: ${needed:-none})"
else
	not_ok "memtrace needs shared$bad (DT_NEEDED: $needed)"
fi
expect_eq "ldd memtrace" "$(ldd "$MEMTRACE" 2>&1 | sed 's/^[[:space:]]*//' | head -n1)" "not a dynamic executable"

# 2. A static target: 1000 x malloc(64) at one site, half of them freed.
cat >"$src" <<'EOF'
#include <stdlib.h>

static void *blocks[1000];

__attribute__((noinline)) void static_site(int n)
{
	for (int i = 0; i < n; i++)
		blocks[i] = malloc(64); /* the site */
}

int main(void)
{
	static_site(1000);
	for (int i = 0; i < 1000; i += 2)
		free(blocks[i]);
	return 0;
}
EOF
mkdir -p "$root/proc" "$root/sys"
if ! gcc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline -static \
	-o "$root/target" "$src" 2>"$TMP/cc.err"; then
	not_ok "could not build a static target (libc6-dev's libc.a?): $(head -c 300 "$TMP/cc.err")"
	fail_rest "no static target"
	finish
fi
cp "$MEMTRACE" "$root/memtrace"
site_line=$(grep -n '/\* the site \*/' "$src" | cut -d: -f1)
expect_eq "files in the root" "$(cd "$root" && find . -type f | sort | tr '\n' ' ')" "./memtrace ./target "

# 3. Record inside the root; report outside with the same binary.
timeout -k 5 "$LIMIT" unshare --mount --propagation private sh -c '
	mount --bind /proc "$1/proc" && mount --bind /sys "$1/sys" &&
	exec chroot "$1" /memtrace record -o /out.mtrace -- /target' sh "$root" \
	>"$TMP/out" 2>"$TMP/err"
rc=$?
expect_eq "memtrace record in the bare root: exit status" "$rc" 0
if grep -q '^memtrace: wrote' "$TMP/err"; then
	ok "memtrace said it wrote the trace"
else
	not_ok "no 'memtrace: wrote' line: $(head -c 300 "$TMP/err" | tr '\n' '|')"
fi
if [ "$(findmnt -rn -o TARGET | grep -c "^$root/")" = 0 ]; then
	ok "no mount left behind under the root"
else
	not_ok "mounts left behind under $root"
fi
if ! report_json "$trace" "$json"; then
	not_ok "memtrace report --json failed: $(head -c 300 "$TMP/report.err")"
	fail_rest "no report of the static target"
	finish
fi
expect_site "$json" static_site allocations 1000
expect_site "$json" static_site allocated_bytes 64000
expect_site "$json" static_site leaked_allocations 500
expect_site "$json" static_site leaked_bytes 32000
expect_eq "static_site module (malloc probed in the executable)" \
	"$(jq -r '[.sites[] | select(.function == "static_site") | .module] | unique | join(",")' "$json")" "/target"
expect_eq "static_site line" \
	"$(jq -r '[.sites[] | select(.function == "static_site") | .line] | unique | join(",")' "$json")" "$site_line"
expect_eq "static_site caller" \
	"$(jq -r "$NESTED"' | [.sites[] | select(.function == "static_site") | .stacks[].frames[1].function] | unique | join(",")' "$json")" "main"
finish
