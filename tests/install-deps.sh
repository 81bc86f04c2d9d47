#!/bin/sh
# Install the Debian packages the build and the tests need, when some are
# missing and we are root; otherwise say what is missing.
set -e
# libclang-rt-14-dev: libFuzzer for tests/fuzz; xz-utils: MiniDebugInfo in tests/e2e/stripped.sh;
# util-linux: unshare and setpriv (tests/e2e/container.sh, caps.sh); procps: pgrep.
# chromium and a font for its screenshots: tests/e2e/html.sh loads the HTML report.
# build/memtrace links statically: libc6-dev, liblzma-dev and libbz2-dev give the libc.a,
# liblzma.a and libbz2.a that libdw.a needs beside the other -dev packages' archives.
# libjemalloc2: an LD_PRELOAD'd allocator in tests/e2e/launch.sh and placement.sh, with
# libtcmalloc-minimal4 (placement.sh) and libmimalloc2.0: the per-allocator rows of make bench;
# libcapstone-dev: the x86 decoder that places probes (its libcapstone.a is linked in); libcap2-bin: setcap
# for the unprivileged cases of tests/e2e/privilege.sh; redis-server, redis-tools and sqlite3:
# Debian binaries built without frame pointers (tests/e2e/redis.sh, sqlite.sh); debuginfod:
# its client (debuginfod-find, which report uses) and a server for tests/e2e/debuginfod.sh.
# libncurses-dev: memtrace top's screen (linked statically); tmux drives it in tests/e2e/top.sh.
# golang-go: Go's own pprof reads the pprof export in tests/e2e/pprof_go.sh (-tags, -list).
# nodejs and python3-tinycss2: the HTML pages' scripts and style checked as what they are
# (tests/golden/html_assets.sh). lld: tests/e2e/rust.sh. postgresql-15: a server that forks a backend per connection, and its pgbench
# (tests/e2e/postgres.sh, bench/attach.sh: --follow-children must not stall it).
# libmicrohttpd-dev: memtrace agent's HTTP server (its libmicrohttpd.a is linked in); prometheus:
# a real Prometheus scrapes the agent in tests/e2e/agent.sh; curl: the requests there; systemd:
# systemd-analyze verifies dist/memtrace-agent.service there. systemtap-sdt-dev: sys/sdt.h, which glibc
# builds its allocator probes with, for tests/progs/glibc_probes.c (tests/e2e/glibc_probes.sh).
# python3.11: Debian's CPython, whose frames tests/e2e/python.sh reads from outside.
pkgs="make gcc g++ clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev libzstd-dev libdw-dev \
libiberty-dev libcapstone-dev libc6-dev liblzma-dev libbz2-dev libcmocka-dev pkg-config jq heaptrack binutils time \
protobuf-compiler chromium chromium-driver python3-selenium fonts-dejavu-core \
libclang-rt-14-dev xz-utils util-linux procps diffutils libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0 libcap2-bin \
redis-server redis-tools sqlite3 debuginfod libncurses-dev tmux zstd python3 zsh groff-base man-db bsdextrautils \
libc6-dbg python3.11 strace golang-go postgresql-15 lld nodejs python3-tinycss2 libmicrohttpd-dev prometheus curl systemd systemtap-sdt-dev"
# Rust programs (tests/e2e/rust.sh) build with the machine's rustc (rustup's),
# else Debian's; lld links them as rustc does by default, and C for the same layout.
if ! command -v rustc >/dev/null && ! [ -x "${HOME:-/root}/.cargo/bin/rustc" ] && ! [ -x /root/.cargo/bin/rustc ]; then
	pkgs="$pkgs rustc"
fi
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "memtrace: missing packages:$missing; run 'sudo apt-get install$missing' or 'sudo make test'" >&2
	exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
