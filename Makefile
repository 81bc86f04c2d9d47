# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# make            build build/memtrace
# make test       (as root) install missing Debian packages, build, run every test tier
# make demo       build, record the bundled demo program, print its report
# make install    put memtrace in $(PREFIX)/bin, its man pages in $(PREFIX)/share/man/man1,
#                 bash and zsh completion in $(PREFIX)/share (DESTDIR=DIR to stage elsewhere)
# make STATIC=0  link build/memtrace against the shared libraries instead (rm build/memtrace first)

PREFIX  ?= /usr/local
BUILD   := build
CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool
ARCH    := x86

CFLAGS  ?= -O2 -g
CFLAGS  += -Wall -Wextra -Wno-unused-parameter -std=gnu11 -fno-omit-frame-pointer
CPPFLAGS += -D_GNU_SOURCE
LIBBPF_A := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libbpf.a /usr/lib64/libbpf.a /usr/lib/libbpf.a))
LDLIBS  := $(if $(LIBBPF_A),$(LIBBPF_A),-lbpf) -lcapstone -lelf -ldw -lzstd -lz -liberty -lncursesw -ltinfo -lmicrohttpd -lpthread -lm
# build/memtrace is linked fully static, so copying that one file to any x86-64 Linux host with a
# BTF kernel is enough to record there: no libbpf, elfutils, zstd or zlib there, and no particular
# glibc either (glibc's static libc is safe here: memtrace makes no NSS lookups). libdw.a pulls in
# the compressors elfutils reads sections with (lzma, bz2, zstd, z); archives follow their users.
# libdw's debuginfod client dlopen()s libdebuginfod.so.1 for modules with no local debug info;
# the link routes that dlopen to user/cli/no_dlopen.c, so nothing is loaded (see there why).
# capstone (libcapstone-dev ships libcapstone.a) decodes the allocator functions to place probes.
# The unit tests stay dynamic (cmocka ships no archive).
STATIC  ?= 1
MEMTRACE_LDFLAGS := $(if $(filter 1,$(STATIC)),-static) -Wl,--wrap=dlopen
MEMTRACE_LDLIBS  := $(if $(filter 1,$(STATIC)),\
	$(if $(LIBBPF_A),$(LIBBPF_A),-lbpf) -lcapstone -ldw -lelf -liberty -lzstd -llzma -lbz2 -lz -lncursesw -ltinfo -lmicrohttpd -lpthread -lm -ldl,\
	$(LDLIBS))

BPF_SRC  := $(wildcard bpf/*.bpf.c)
BPF_OBJ  := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRC))
SKEL     := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRC))
# user/ has a folder per pipeline stage. Each folder sees the headers of the
# stages it may use and no others, so the direction is enforced by the build:
# the read side (trace, symbols, analysis, output) never sees libbpf, the BPF
# skeletons or the recorder; it sees bpf/ only for the ABI header, whose
# event and mark kinds the trace shares. docs/architecture.md says what each folder does.
STAGES       := lib trace symbols analysis output record agent cli
INC_lib      := lib
INC_trace    := lib trace bpf
INC_symbols  := lib trace symbols bpf
INC_analysis := lib trace analysis bpf
INC_output   := lib trace analysis output bpf
INC_record   := lib trace symbols record bpf build
# the agent rides on the live engine top uses (cli/live_feed.h) and serves
# report's HTML page (cli/commands.h)
INC_agent    := lib trace symbols analysis output record agent cli bpf build
INC_cli      := $(STAGES) bpf build
inc_dirs = $(patsubst -Iuser/bpf,-Ibpf,$(patsubst -Iuser/build,-I$(BUILD),$(addprefix -Iuser/,$(1))))
ALL_INC  := $(call inc_dirs,$(INC_cli))
USER_SRC := $(wildcard $(addsuffix /*.c,$(addprefix user/,$(STAGES))))
USER_ASM := $(wildcard $(addsuffix /*.S,$(addprefix user/,$(STAGES))))
USER_OBJ := $(patsubst user/%.c,$(BUILD)/user/%.o,$(USER_SRC)) $(patsubst user/%.S,$(BUILD)/user/%.o,$(USER_ASM))
CLI_MAIN := $(BUILD)/user/cli/main.o $(BUILD)/user/cli/no_dlopen.o $(BUILD)/user/cli/no_tls.o
# libmicrohttpd's GnuTLS calls, stubbed in a static memtrace (user/cli/no_tls.c says why)
$(BUILD)/user/cli/no_tls.o: CPPFLAGS += $(if $(filter 1,$(STATIC)),-DMEMTRACE_NO_TLS)
LIB_OBJ  := $(filter-out $(CLI_MAIN),$(USER_OBJ))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
PROG_C   := $(wildcard tests/progs/*.c)
PROG_CXX := $(wildcard tests/progs/*.cpp)
PROG_BIN := $(patsubst tests/progs/%.c,$(BUILD)/progs/%,$(PROG_C)) \
            $(patsubst tests/progs/%.cpp,$(BUILD)/progs/%,$(PROG_CXX))

.PHONY: all test install demo deps clean progs unit
.DELETE_ON_ERROR:
.SECONDARY: $(BPF_OBJ) $(SKEL)
all: $(BUILD)/memtrace $(BUILD)/libmemtrace_preload.so

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) vmlinux/vmlinux.h | $(BUILD)
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Ibpf -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@

# Header dependencies are generated (-MMD): a changed header rebuilds exactly its users.
# The skeletons are generated headers: every object waits for them to exist.
$(BUILD)/user/%.o: user/%.c | $(SKEL) $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(call inc_dirs,$(INC_$(patsubst %/,%,$(dir $*)))) $(CFLAGS) -MMD -MP -c $< -o $@

-include $(USER_OBJ:.o=.d)

# The HTML pages' own files (user/output/html/) go into the binary as they are (.incbin).
$(BUILD)/user/%.o: user/%.S | $(BUILD)
	@mkdir -p $(@D)
	$(CC) -c $< -o $@
$(BUILD)/user/output/html_assets.o: $(wildcard user/output/html/*)

# What memtrace --version says about this build: rewritten only when it
# changes (a new commit, another compiler), so only cmd_version.o follows.
VERSION := 0.1.0
$(BUILD)/version.h: FORCE | $(BUILD)
	@v='#define MEMTRACE_VERSION "$(VERSION)"'; \
	b="#define MEMTRACE_BUILD \"commit $$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo +changes), $$($(CC) -dumpfullversion 2>/dev/null | sed 's/^/gcc /'), $(if $(filter 1,$(STATIC)),static,dynamic)\""; \
	printf '%s\n%s\n' "$$v" "$$b" | cmp -s - $@ || printf '%s\n%s\n' "$$v" "$$b" > $@
$(BUILD)/user/cli/cmd_version.o: $(BUILD)/version.h
.PHONY: FORCE
FORCE:

$(BUILD)/libmemtrace.a: $(LIB_OBJ)
	rm -f $@; ar rcs $@ $^

$(BUILD)/memtrace: $(CLI_MAIN) $(BUILD)/libmemtrace.a
	$(CC) $(CFLAGS) $(MEMTRACE_LDFLAGS) -o $@ $^ $(MEMTRACE_LDLIBS)

# record --preload's interposer (inproc/preload/preload.c), put beside memtrace:
# memtrace looks for it next to its own executable, or in ../lib/memtrace.
# Frame pointers for the walk that starts in it. No TLS and no libgcc_s
# (preload.c says why): the program must not see it there.
PRELOAD_FLAGS := -O2 -g -fPIC -shared -fno-omit-frame-pointer -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE -Ibpf
$(BUILD)/libmemtrace_preload.so: inproc/preload/preload.c bpf/memtrace_abi.h bpf/unwind_rule.h | $(BUILD)
	$(CC) $(PRELOAD_FLAGS) -o $@ $< -ldl -lpthread

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libmemtrace.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(ALL_INC) $(CFLAGS) -MMD -MP -o $@ $< $(BUILD)/libmemtrace.a -lcmocka $(LDLIBS)

-include $(UNIT_BIN:=.d)

# Test targets keep frame pointers and line info so stacks and sites are exact.
PROG_FLAGS := -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline -pthread
# Test programs may include the marks header: a new header rebuilds them.
$(PROG_BIN): inproc/memtrace.h
$(BUILD)/progs/%: tests/progs/%.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(PROG_FLAGS) -o $@ $< $(subst -Lbuild/,-L$(BUILD)/,$(shell sed -n 's,^// link: ,,p' $<))
$(BUILD)/progs/%: tests/progs/%.cpp | $(BUILD)
	@mkdir -p $(@D)
	$(CXX) $(PROG_FLAGS) -o $@ $< $(subst -Lbuild/,-L$(BUILD)/,$(shell sed -n 's,^// link: ,,p' $<))
$(BUILD)/progs/libtinyalloc.so: tests/progs/tinyalloc/tinyalloc.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(PROG_FLAGS) -fPIC -shared -o $@ $<

$(BUILD)/progs/libplugin.so: tests/progs/plugin/plugin.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(PROG_FLAGS) -Iinproc -fPIC -shared -o $@ $<

$(BUILD)/progs/libplugalloc.so: tests/progs/plugin/plugalloc.c tests/progs/tinyalloc/tinyalloc.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(PROG_FLAGS) -fPIC -shared -Wl,-Bsymbolic-functions -o $@ $^

$(BUILD)/progs/uses_tinyalloc: $(BUILD)/progs/libtinyalloc.so

$(BUILD)/progs/libcountalloc.so: tests/progs/preload/countalloc.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(PROG_FLAGS) -fPIC -shared -o $@ $< -ldl

$(BUILD)/progs/libctorlib.so: tests/progs/ctorlib/ctorlib.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(PROG_FLAGS) -fPIC -shared -o $@ $<
$(BUILD)/progs/launch_ctor: $(BUILD)/progs/libctorlib.so

# The same program with and without frame pointers (tests/e2e/unwind.sh): the
# second as distributions build, -O2 without frame pointers; no sibling calls
# in either, so both have the same frames.
NOFP_FLAGS := -O2 -g -fomit-frame-pointer -fno-optimize-sibling-calls -pthread
$(BUILD)/progs/libunwindlib.so: tests/progs/unwindlib/unwindlib.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(PROG_FLAGS) -fPIC -shared -o $@ $<
$(BUILD)/progs/nofp/libunwindlib.so: tests/progs/unwindlib/unwindlib.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(NOFP_FLAGS) -fPIC -shared -o $@ $<
$(BUILD)/progs/unwind_levels: $(BUILD)/progs/libunwindlib.so
$(BUILD)/progs/nofp/unwind_levels: tests/progs/unwind_levels.cpp $(BUILD)/progs/nofp/libunwindlib.so
	@mkdir -p $(@D)
	$(CXX) $(NOFP_FLAGS) -o $@ $< -L$(BUILD)/progs/nofp -lunwindlib '-Wl,-rpath,$$ORIGIN'
$(BUILD)/progs/nofp/deep_frames: tests/progs/deep_frames.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(NOFP_FLAGS) -o $@ $<
$(BUILD)/progs/nofp/same_depth: tests/progs/same_depth.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(NOFP_FLAGS) -o $@ $<

# ... and once more with call frame information only in .debug_frame (no
# .eh_frame for our code): what some C builds with -g and no unwind tables give.
DBGFRAME_FLAGS := $(NOFP_FLAGS) -fno-exceptions -fno-unwind-tables -fno-asynchronous-unwind-tables
$(BUILD)/progs/dbgframe/libunwindlib.so: tests/progs/unwindlib/unwindlib.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(DBGFRAME_FLAGS) -fPIC -shared -o $@ $<
$(BUILD)/progs/dbgframe/unwind_levels: tests/progs/unwind_levels.cpp $(BUILD)/progs/dbgframe/libunwindlib.so
	@mkdir -p $(@D)
	$(CXX) $(DBGFRAME_FLAGS) -o $@ $< -L$(BUILD)/progs/dbgframe -lunwindlib '-Wl,-rpath,$$ORIGIN'

# The same known pattern, linked statically: no dynamic linker to wait for.
$(BUILD)/progs/alloc_patterns_static: tests/progs/alloc_patterns.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(PROG_FLAGS) -static -o $@ $<

# No C library, no allocator: a process memtrace can find but not record.
$(BUILD)/progs/no_allocator: tests/progs/noalloc/no_allocator.c | $(BUILD)
	@mkdir -p $(@D)
	$(CC) -O1 -static -nostdlib -o $@ $<

progs: $(PROG_BIN) $(BUILD)/progs/no_allocator $(BUILD)/progs/libtinyalloc.so $(BUILD)/progs/libplugin.so \
	$(BUILD)/progs/libcountalloc.so \
	$(BUILD)/progs/libplugalloc.so $(BUILD)/progs/libctorlib.so $(BUILD)/progs/alloc_patterns_static \
	$(BUILD)/progs/nofp/unwind_levels $(BUILD)/progs/dbgframe/unwind_levels $(BUILD)/progs/nofp/deep_frames \
	$(BUILD)/progs/nofp/same_depth
unit: $(UNIT_BIN)

$(BUILD):
	mkdir -p $(BUILD)

deps:
	@sh tests/install-deps.sh

test: deps
	$(MAKE) all unit progs
	@sh tests/run.sh

demo: deps all
	$(MAKE) $(BUILD)/progs/demo
	rm -f $(BUILD)/demo.mtrace
	$(BUILD)/memtrace record -o $(BUILD)/demo.mtrace -- $(BUILD)/progs/demo
	$(BUILD)/memtrace report $(BUILD)/demo.mtrace

install: all
	install -D -m 0755 $(BUILD)/memtrace $(DESTDIR)$(PREFIX)/bin/memtrace
	install -D -m 0644 $(BUILD)/libmemtrace_preload.so $(DESTDIR)$(PREFIX)/lib/memtrace/libmemtrace_preload.so
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 docs/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -D -m 0644 completion/memtrace.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/memtrace
	install -D -m 0644 completion/_memtrace $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_memtrace

clean:
	rm -rf $(BUILD)

# make bench     (as root) what tracing costs per malloc+free pair against the empty-probe floors,
#                throughput, bytes and recorder CPU per event; prints issue 4's targets table;
#                then per allocator (glibc, C++ new/delete, jemalloc, tcmalloc, mimalloc, redis-server)
#                against each one's floor: bench/allocators.sh, issue 14's targets
.PHONY: bench
bench: all
	bash bench/run.sh

# make soak: a 10-minute recording of a busy target; the recorder's memory must stay flat.
.PHONY: soak
soak: all
	bash bench/soak.sh
# make agent-soak: memtrace agent over 10 minutes of processes with 131072 stacks each; its
# memory must stay flat and a freed target leave no descriptor or BPF link behind.
.PHONY: agent-soak
agent-soak: all progs
	bash bench/agent_soak.sh
# make agent-cost: what each target costs the agent (kernel memory, descriptors, its own
# memory) with 1, 16 and 64 targets, against issue 45's targets.
.PHONY: agent-cost
agent-cost: all progs
	bash bench/agent_cost.sh


# make fuzz      every libFuzzer harness of tests/fuzz (clang, ASan, UBSan) for
#                FUZZ_SECONDS each (600), growing the corpus in $(BUILD)/fuzz/work;
#                crashing inputs land in $(BUILD)/fuzz/crashes. make test runs
#                them 20 s each (tests/e2e/fuzz_short.sh).
FUZZ_SECONDS ?= 600
.PHONY: fuzz
fuzz:
	bash tests/fuzz/run.sh $(FUZZ_SECONDS) $(BUILD)/fuzz/work
