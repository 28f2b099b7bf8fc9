//! Fault injection (issue #13): a representative program (a context and stream, dense arrays, a
//! CSR matrix, analysis, spmv and spmm N and T on floats, events and a spike list, compaction,
//! plasticity, yw2y, csr→csc) runs once per allocation evsparse makes for its buffers, that
//! allocation failing each time, then once per checked CUDA driver call, that call failing
//! (`core::faults`). Every run must fail with the status of the fault (EVS_ERROR_OUT_OF_MEMORY,
//! or EVS_ERROR_DEVICE for a driver call) and a message naming the injected failure, leave no
//! buffer alive once its handles are dropped, and the unarmed program must then run through.
//! Its own test binary, the tests one at a time: the switches are process-wide. On
//! EVS_TEST_DEVICE (cpu by default, which makes no driver calls; cuda on the GPU check).

mod common;

use common::{encode, try_setup};
use evsparse::core::csr::{Csr, CsrShape};
use evsparse::core::dense::Dense;
use evsparse::core::faults;
use evsparse::core::spikes::{SpikeList, Spikes};
use evsparse::core::{ops, InputKind, Op};
use evsparse::dtype::DType;
use evsparse::error::{Error, Result, EVS_ERROR_DEVICE, EVS_ERROR_OUT_OF_MEMORY};
use std::sync::Mutex;

/// Held by each test: the switches are process-wide.
static SWITCHES: Mutex<()> = Mutex::new(());

/// Every operation family once, from the context's creation to its handles' release.
fn program() -> Result<()> {
    let (ctx, s) = try_setup()?;
    let (m, k, per_row) = (300usize, 200usize, 12usize);
    let indptr: Vec<i64> = (0..=m).map(|i| (i * per_row) as i64).collect();
    let indices: Vec<i32> = (0..m * per_row).map(|p| ((p * 7919) % k) as i32).collect();
    let weights = encode(DType::F32, &vec![0.5; indices.len()]);
    let shape = CsrShape::new(m as i64, k as i64, indices.len() as i64, DType::I64, DType::F32)?;
    // SAFETY: the host arrays hold m + 1 indptr entries and nnz indices and weights.
    let a = unsafe {
        Csr::from_host(&ctx, shape, indptr.as_ptr() as *const u8, indices.as_ptr(), Some(weights.as_ptr()), 0.0)
    }?;
    ops::analyse(&s, &a)?;
    let dense = |dtype, ndim, rows: usize, cols: usize, value: f64| -> Result<Dense> {
        let d = Dense::create(&ctx, dtype, ndim, rows as i64, cols as i64)?;
        d.fill(&s, value)?;
        Ok(d)
    };
    let (x, y) = (dense(DType::F32, 1, k, 1, 1.0)?, dense(DType::F32, 1, m, 1, 0.0)?);
    ops::spmm(&s, Op::N, InputKind::Float, 1.0, &a, &x, 0.0, &y, true)?;
    let spikes = dense(DType::Bool, 1, m, 1, 1.0)?;
    let out = dense(DType::F32, 1, k, 1, 0.0)?;
    ops::spmm(&s, Op::T, InputKind::Events, 1.0, &a, &spikes, 0.0, &out, true)?;
    let (b, c) = (dense(DType::Bool, 2, m, 16, 1.0)?, dense(DType::F32, 2, k, 16, 0.0)?);
    ops::spmm(&s, Op::T, InputKind::Events, 1.0, &a, &b, 0.0, &c, false)?;
    let (list, count) = (dense(DType::I32, 1, m, 1, 0.0)?, dense(DType::I32, 1, 1, 1, 0.0)?);
    ops::compact(&s, &spikes, &list, &count)?;
    let listed = SpikeList { indices: &list, count: &count };
    ops::spmv_spikes(&s, Op::T, 1.0, &a, listed, 0.0, &out)?;
    let trace = dense(DType::F32, 1, k, 1, 0.01)?;
    ops::csr_plasticity(&s, false, &a, Spikes::List(listed), &trace, 0.0, 1.0)?;
    let products = dense(DType::F32, 1, indices.len(), 1, 0.0)?;
    ops::yw2y(&s, Op::N, &a, None, 1.0, &y, 0.0, &products)?;
    let colptr = dense(DType::I64, 1, k + 1, 1, 0.0)?;
    let (rowind, perm) = (dense(DType::I32, 1, indices.len(), 1, 0.0)?, dense(DType::I64, 1, indices.len(), 1, 0.0)?);
    ops::csr_to_csc(&s, &a, &colptr, &rowind, &perm)?;
    s.synchronize()
}

/// Runs the program with fault `n` armed by `arm` for n = 0, 1, ... until it runs through;
/// each failing run must report `status` for the injected fault and leave nothing alive.
/// Returns how many faults were injected.
fn each_fault_in_turn(arm: fn(Option<u64>), status: i32, what: &str) -> u64 {
    let _one_at_a_time = SWITCHES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // A context held, unarmed, across the runs: each run's own context still makes every call
    // of its creation, but finds the device's primary context alive where the driver would
    // otherwise destroy it with its last holder and build it again for the next run.
    let _held = try_setup().expect("an unarmed context");
    assert_eq!(faults::live_bytes(), 0, "an unused context holds no buffers");
    let mut failed = 0u64;
    loop {
        arm(Some(failed));
        let result = program();
        arm(None);
        assert_eq!(faults::live_bytes(), 0, "{what} {failed} failing: buffers left alive");
        match result {
            Ok(()) => break,
            Err(Error { status: got, message }) => {
                assert_eq!(got, status, "{what} {failed} failing: {message}");
                assert!(message.contains("injected failure"), "{what} {failed} failing: {message}");
            }
        }
        failed += 1;
    }
    program().unwrap();
    failed
}

#[test]
fn every_allocation_failing_in_turn_reports_and_leaks_nothing() {
    let failed = each_fault_in_turn(faults::fail_allocation_after, EVS_ERROR_OUT_OF_MEMORY, "allocation");
    assert!(failed >= 10, "the program made only {failed} allocations");
    println!("{failed} allocations failed in turn: each reported out of memory, none leaked");
}

#[test]
fn every_driver_call_failing_in_turn_reports_and_leaks_nothing() {
    let failed = each_fault_in_turn(faults::fail_driver_call_after, EVS_ERROR_DEVICE, "driver call");
    let cuda = std::env::var("EVS_TEST_DEVICE").is_ok_and(|d| d == "cuda");
    assert!(!cuda || failed >= 50, "the program made only {failed} checked driver calls");
    println!("{failed} driver calls failed in turn: each reported a device error, none leaked");
}
