// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//! rsalloc: a Rust program with known allocations, built as `cargo build
//! --release` builds (optimized, no frame pointers, line tables) by
//! tests/e2e/rust.sh with the machine's rustc, the standard library only.
//!   make_vec: 10 x vec![7u64; 100 + i] (800..872 bytes), called by layer,
//!             called by main; freed by layer.
//!   make_map: one HashMap of 64 u64 -> u64, kept until main returns
//!             (hashbrown's raw table: one allocation, grown as it fills).
use std::collections::HashMap;
use std::hint::black_box;

#[inline(never)]
fn make_vec(n: usize) -> Vec<u64> {
    let v = vec![7u64; n];
    black_box(v)
}

#[inline(never)]
fn layer(n: usize) -> usize {
    let v = make_vec(n);
    black_box(&v);
    v.len()
}

#[inline(never)]
fn make_map() -> HashMap<u64, u64> {
    let mut m = HashMap::with_capacity(64);
    for i in 0..64u64 {
        m.insert(i, i * 3);
    }
    black_box(m)
}

fn main() {
    let mut total = 0;
    for i in 0..10 {
        total += layer(100 + i);
    }
    let m = make_map();
    println!("rsalloc: {} {}", total, m.len());
}
