#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The short fuzz run of `make test`: every libFuzzer harness of tests/fuzz
# for FUZZ_SHORT_SECONDS (20) from the seed corpus. `make fuzz` runs them longer.
# A fixed seed: the same inputs on every run, so CI results are reproducible.
FUZZ_SEED=${FUZZ_SEED:-1} exec bash "$(dirname "$0")/../fuzz/run.sh" "${FUZZ_SHORT_SECONDS:-20}"
