//! The README's promise for the CPU backend: calls small enough to run on the calling thread
//! reuse per-thread buffers, so a repeated call allocates nothing. A counting allocator counts
//! this thread's allocations over repeated calls of one simulation step on a 4,000-neuron
//! network (spike propagation, compaction, plasticity pre and post on event vectors), yw2y and
//! dense plasticity, after two warm-up calls of each.

mod common;

use common::{encode, upload};
use evsparse::core::context::{Context, Stream, EVS_DEVICE_CPU};
use evsparse::core::csr::{Csr, CsrShape};
use evsparse::core::dense::Dense;
use evsparse::core::spikes::Spikes;
use evsparse::core::{ops, InputKind, Op};
use evsparse::dtype::DType;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

/// Counts the allocations of the threads that switched counting on.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the thread-locals are const-initialized, so
// counting allocates nothing itself.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.get() {
            COUNT.set(COUNT.get() + 1);
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations this thread makes in `f`.
fn allocations_in(f: impl FnOnce()) -> usize {
    COUNT.set(0);
    COUNTING.set(true);
    f();
    COUNTING.set(false);
    COUNT.get()
}

/// n x n with `per_row` entries a row (column (i * 7 + j * 13) % n), hetero f32 weights.
fn network(ctx: &Arc<Context>, n: usize, per_row: usize) -> Csr {
    let indptr: Vec<i32> = (0..=n).map(|i| (i * per_row) as i32).collect();
    let indices: Vec<i32> = (0..n * per_row).map(|e| ((e / per_row * 7 + e % per_row * 13) % n) as i32).collect();
    let weights = encode(DType::F32, &vec![0.5; n * per_row]);
    let shape = CsrShape::new(n as i64, n as i64, (n * per_row) as i64, DType::I32, DType::F32).unwrap();
    let indptr = encode(DType::I32, &indptr.iter().map(|&v| v as f64).collect::<Vec<_>>());
    unsafe { Csr::from_host(ctx, shape, indptr.as_ptr(), indices.as_ptr(), Some(weights.as_ptr()), 0.0) }.unwrap()
}

/// A bool event vector with every 200th neuron active.
fn spikes(ctx: &Arc<Context>, s: &Stream, n: usize) -> Dense {
    let v: Vec<f64> = (0..n).map(|i| (i % 200 == 0) as u8 as f64).collect();
    upload(ctx, s, DType::Bool, (1, n, 1), &v)
}

#[test]
fn repeated_small_cpu_calls_allocate_nothing() {
    let ctx = Context::new(EVS_DEVICE_CPU, 0).unwrap();
    let s = Stream::new(&ctx).unwrap();
    let n = 4000;
    let a = network(&ctx, n, 80);
    let fired = spikes(&ctx, &s, n);
    let f32s = |len: usize, v: f64| upload(&ctx, &s, DType::F32, (1, len, 1), &vec![v; len]);
    let (current, trace) = (f32s(n, 0.0), f32s(n, 0.01));
    let (indices, count) =
        (upload(&ctx, &s, DType::I32, (1, n, 1), &vec![0.0; n]), upload(&ctx, &s, DType::I32, (1, 1, 1), &[0.0]));
    let small = network(&ctx, 100, 10);
    let (y, out) = (f32s(100, 1.0), f32s(1000, 0.0));
    let w = upload(&ctx, &s, DType::F32, (2, 100, 100), &vec![0.5; 100 * 100]);
    let few = spikes(&ctx, &s, 100);
    let (trace100, events) = (f32s(100, 0.01), Spikes::Events(&fired));
    type Call<'a> = Box<dyn Fn() + 'a>;
    let calls: Vec<(&str, Call)> = vec![
        (
            "spmv T on events",
            Box::new(|| ops::spmm(&s, Op::T, InputKind::Events, 1.0, &a, &fired, 1.0, &current, true).unwrap()),
        ),
        ("compact", Box::new(|| ops::compact(&s, &fired, &indices, &count).unwrap())),
        ("plasticity pre", Box::new(|| ops::csr_plasticity(&s, false, &a, events, &trace, -1.0, 1.0).unwrap())),
        ("plasticity post", Box::new(|| ops::csr_plasticity(&s, true, &a, events, &trace, -1.0, 1.0).unwrap())),
        ("yw2y N", Box::new(|| ops::yw2y(&s, Op::N, &small, None, 1.0, &y, 0.0, &out).unwrap())),
        ("yw2y T", Box::new(|| ops::yw2y(&s, Op::T, &small, None, 1.0, &y, 0.0, &out).unwrap())),
        (
            "dense plasticity pre",
            Box::new(|| ops::dense_plasticity(&s, false, &w, Spikes::Events(&few), &trace100, -1.0, 1.0).unwrap()),
        ),
        (
            "dense plasticity post",
            Box::new(|| ops::dense_plasticity(&s, true, &w, Spikes::Events(&few), &trace100, -1.0, 1.0).unwrap()),
        ),
    ];
    for (what, call) in &calls {
        call();
        call();
        assert_eq!(allocations_in(|| (0..3).for_each(|_| call())), 0, "{what}: allocations in three repeated calls");
    }
}
