//! Soak (issue #13): a simulator's loop of small calls (compaction, spmv T on the spike list and
//! on the event vector, plasticity pre), a fresh output array every 1,000 calls, run 10^6 calls
//! (EVS_SOAK_CALLS) after a warm-up; the process's resident memory and evsparse's live buffers
//! must stay flat. On EVS_TEST_DEVICE (cpu by default; cuda on the GPU check).

mod common;

use common::{encode, env_number, setup, upload};
use evsparse::core::csr::{Csr, CsrShape};
use evsparse::core::dense::Dense;
use evsparse::core::faults;
use evsparse::core::spikes::{SpikeList, Spikes};
use evsparse::core::{ops, InputKind, Op};
use evsparse::dtype::DType;

/// Resident set size in bytes (Linux; 0 elsewhere, which the test then does not check).
fn resident_bytes() -> i64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|pages| pages.parse::<i64>().ok()).unwrap_or(0) * 4096
}

#[test]
fn a_million_small_calls_keep_memory_flat() {
    let calls = env_number("EVS_SOAK_CALLS").unwrap_or(1_000_000);
    let (ctx, s) = setup();
    let (n, per_row) = (400usize, 8usize);
    let indptr: Vec<i32> = (0..=n).map(|i| (i * per_row) as i32).collect();
    let indices: Vec<i32> = (0..n * per_row).map(|p| ((p * 7919) % n) as i32).collect();
    let weights = encode(DType::F32, &vec![0.25; indices.len()]);
    let shape = CsrShape::new(n as i64, n as i64, indices.len() as i64, DType::I32, DType::F32).unwrap();
    // SAFETY: the host arrays hold n + 1 indptr entries and nnz indices and weights.
    let a = unsafe {
        Csr::from_host(&ctx, shape, indptr.as_ptr() as *const u8, indices.as_ptr(), Some(weights.as_ptr()), 0.0)
    }
    .unwrap();
    ops::analyse(&s, &a).unwrap();
    let spikes =
        upload(&ctx, &s, DType::Bool, (1, n, 1), &(0..n).map(|i| (i % 50 == 0) as u8 as f64).collect::<Vec<_>>());
    let trace = upload(&ctx, &s, DType::F32, (1, n, 1), &vec![1e-6; n]);
    let list = Dense::create(&ctx, DType::I32, 1, n as i64, 1).unwrap();
    let count = Dense::create(&ctx, DType::I32, 1, 1, 1).unwrap();
    let listed = SpikeList { indices: &list, count: &count };
    let step = |y: &Dense| {
        ops::compact(&s, &spikes, &list, &count).unwrap();
        ops::spmv_spikes(&s, Op::T, 1.0, &a, listed, 0.0, y).unwrap();
        ops::spmm(&s, Op::T, InputKind::Events, -1.0, &a, &spikes, 1.0, y, true).unwrap();
        ops::csr_plasticity(&s, false, &a, Spikes::List(listed), &trace, 0.0, 1.0).unwrap();
    };
    let run = |calls: usize| {
        let steps = calls.div_ceil(4); // four calls a step
        for first in (0..steps).step_by(250) {
            let y = Dense::create(&ctx, DType::F32, 1, n as i64, 1).unwrap();
            for _ in first..(first + 250).min(steps) {
                step(&y);
            }
            s.synchronize().unwrap();
        }
    };
    run(40_000); // warm-up: thread-local buffers, the pool, the allocator's arenas
    let (rss, live) = (resident_bytes(), faults::live_bytes());
    let started = std::time::Instant::now();
    run(calls);
    let grown = resident_bytes() - rss;
    assert_eq!(faults::live_bytes(), live, "evsparse's live buffers changed over the soak");
    assert!(grown < 4 << 20, "resident memory grew by {grown} bytes over {calls} calls");
    println!(
        "{calls} calls in {:.1} s: resident memory {:.1} MB before, {:+.2} MB after; live buffers {live} bytes before and after",
        started.elapsed().as_secs_f64(),
        rss as f64 / 1e6,
        grown as f64 / 1e6
    );
}
