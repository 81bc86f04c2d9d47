#!/bin/sh
# Install the Debian packages the build and the tests need, when some are
# missing and we are root; otherwise say what is missing.
set -e
pkgs="make gcc g++ clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev libzstd-dev libdw-dev \
libiberty-dev libcmocka-dev pkg-config jq heaptrack binutils time protobuf-compiler"
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
