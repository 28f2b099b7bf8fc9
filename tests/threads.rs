//! Threads on one context (issue #13): 8 threads, each with its own stream or all on one, run
//! 1,000 mixed calls (spmv and spmm N and T on floats, events and a spike list, compaction,
//! yw2y, dense mm N and T on events, with arrays created and destroyed along the way) on matrices they
//! share, and every result must equal the one the same call gave alone before the threads
//! started. On EVS_TEST_DEVICE (cpu by default; cuda on the GPU check).

mod common;

use common::{encode, env_number, read, setup, upload};
use evsparse::core::context::{Context, Stream};
use evsparse::core::csr::{Csr, CsrShape};
use evsparse::core::dense::Dense;
use evsparse::core::spikes::SpikeList;
use evsparse::core::{ops, InputKind, Op};
use evsparse::dtype::DType;
use std::sync::Arc;

const THREADS: usize = 8;

/// Calls per thread: 1,000, or EVS_THREADS_CALLS.
fn calls() -> usize {
    env_number("EVS_THREADS_CALLS").unwrap_or(1000)
}

/// EVS_THREADS_KIND = k runs only calls of kind k (to find which one a sanitizer trips on).
fn only_kind() -> Option<usize> {
    env_number("EVS_THREADS_KIND")
}

/// EVS_THREADS_TRACE = 1 prints each call's start and end with the time since the threads began
/// (to see which calls a stalled run waits on).
fn trace() -> bool {
    env_number("EVS_THREADS_TRACE") == Some(1)
}

const KINDS: usize = 8;

/// The shared inputs: a matrix, a float vector, spikes as events and as a list, a dense W and
/// matrices of events for N and for T with it.
struct Inputs {
    a: Csr,
    x: Dense,
    spikes: Dense,
    list: Dense,
    count: Dense,
    w: Dense,
    events: Dense,
    events_t: Dense,
}

/// Dense mm N's W (DM x DK) and events (DK x DN): on Hopper 2 tiles of 128 steps over every SM,
/// so each tile's sum waits on partial sums from dozens of CTAs while other threads' calls hold
/// SMs (kernels/dense.cu, dense_wgmma).
const DM: usize = 256;
const DK: usize = 8192;
const DN: usize = 8;
/// Dense mm T's columns of events (DM x DN_T) with the same W (its DK columns the outputs): past
/// `active_rows`' 16, so on Hopper the tensor cores, whose 64 tiles of 4 steps two CTAs share.
const DN_T: usize = 20;

const M: usize = 500;
const K: usize = 400;

fn inputs(ctx: &Arc<Context>, s: &Stream) -> Inputs {
    let per_row = 9;
    let indptr: Vec<i32> = (0..=M).map(|i| (i * per_row) as i32).collect();
    let indices: Vec<i32> = (0..M * per_row).map(|p| ((p * 7919 + p / 3) % K) as i32).collect();
    let weights = encode(DType::F32, &(0..indices.len()).map(|p| (p % 17) as f64 / 16.0).collect::<Vec<_>>());
    let shape = CsrShape::new(M as i64, K as i64, indices.len() as i64, DType::I32, DType::F32).unwrap();
    // SAFETY: the host arrays hold m + 1 indptr entries and nnz indices and weights.
    let a = unsafe {
        Csr::from_host(ctx, shape, indptr.as_ptr() as *const u8, indices.as_ptr(), Some(weights.as_ptr()), 0.0)
    }
    .unwrap();
    ops::analyse(s, &a).unwrap();
    let fired: Vec<f64> = (0..M).map(|i| (i % 23 == 0) as u8 as f64).collect();
    let listed: Vec<f64> = (0..M).filter(|i| i % 23 == 0).map(|i| i as f64).collect();
    let weights_of_w: Vec<f64> = (0..DM * DK).map(|i| (i % 13) as f64 / 8.0 - 0.75).collect();
    let events: Vec<f64> = (0..DK * DN).map(|i| (i % 7 == 0) as u8 as f64).collect();
    let events_t: Vec<f64> = (0..DM * DN_T).map(|i| (i % 5 == 0) as u8 as f64).collect();
    Inputs {
        x: upload(ctx, s, DType::F32, (1, K, 1), &(0..K).map(|i| (i % 5) as f64 - 2.0).collect::<Vec<_>>()),
        spikes: upload(ctx, s, DType::Bool, (1, M, 1), &fired),
        count: upload(ctx, s, DType::I32, (1, 1, 1), &[listed.len() as f64]),
        list: upload(ctx, s, DType::I32, (1, listed.len(), 1), &listed),
        w: upload(ctx, s, DType::F32, (2, DM, DK), &weights_of_w),
        events: upload(ctx, s, DType::Bool, (2, DK, DN), &events),
        events_t: upload(ctx, s, DType::Bool, (2, DM, DN_T), &events_t),
        a,
    }
}

/// Call `kind` on fresh output arrays (created and destroyed here); its outputs as host values.
fn call(ctx: &Arc<Context>, s: &Stream, d: &Inputs, kind: usize) -> Vec<f64> {
    let out = |ndim, rows, cols| Dense::create(ctx, DType::F32, ndim, rows as i64, cols as i64).unwrap();
    let y = match kind {
        0 => {
            let y = out(1, M, 1);
            ops::spmm(s, Op::N, InputKind::Float, 1.0, &d.a, &d.x, 0.0, &y, true).unwrap();
            y
        }
        1 => {
            let y = out(1, K, 1);
            ops::spmm(s, Op::T, InputKind::Events, 0.5, &d.a, &d.spikes, 0.0, &y, true).unwrap();
            y
        }
        2 => {
            let y = out(1, K, 1);
            let list = SpikeList { indices: &d.list, count: &d.count };
            ops::spmv_spikes(s, Op::T, 1.0, &d.a, list, 0.0, &y).unwrap();
            y
        }
        3 => {
            let b = Dense::create(ctx, DType::Bool, 2, M as i64, 3).unwrap();
            b.fill(s, 1.0).unwrap();
            let c = out(2, K, 3);
            ops::spmm(s, Op::T, InputKind::Events, 1.0, &d.a, &b, 0.0, &c, false).unwrap();
            c
        }
        4 => {
            let indices = Dense::create(ctx, DType::I32, 1, M as i64, 1).unwrap();
            let count = Dense::create(ctx, DType::I32, 1, 1, 1).unwrap();
            ops::compact(s, &d.spikes, &indices, &count).unwrap();
            let mut got = read(s, &count);
            got.extend(read(s, &indices).into_iter().take(got[0] as usize));
            return got;
        }
        6 => {
            let c = out(2, DM, DN);
            ops::dense_mm(s, Op::N, InputKind::Events, 1.0, &d.w, &d.events, 0.0, &c, false).unwrap();
            c
        }
        7 => {
            let c = out(2, DK, DN_T);
            ops::dense_mm(s, Op::T, InputKind::Events, 1.0, &d.w, &d.events_t, 0.0, &c, false).unwrap();
            c
        }
        _ => {
            let y = out(1, d.a.nnz, 1);
            ops::yw2y(s, Op::T, &d.a, None, 1.0, &d.x, 0.0, &y).unwrap();
            y
        }
    };
    read(s, &y)
}

/// THREADS threads run `calls` mixed calls each, on their own streams or on one stream they
/// share, and every result must equal the same call's alone.
fn threads_agree_with_one(share_one_stream: bool) {
    let (ctx, s) = setup();
    let calls = calls();
    let shared = Arc::new(inputs(&ctx, &s));
    let alone: Arc<Vec<Vec<f64>>> = Arc::new((0..KINDS).map(|kind| call(&ctx, &s, &shared, kind)).collect());
    let common = Arc::new(Stream::new(&ctx).unwrap());
    let (began, tracing) = (std::time::Instant::now(), trace());
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (ctx, shared, alone, common) = (ctx.clone(), shared.clone(), alone.clone(), common.clone());
            std::thread::spawn(move || {
                let own = (!share_one_stream).then(|| Stream::new(&ctx).unwrap());
                let s = own.as_ref().unwrap_or(&common);
                for i in 0..calls {
                    let kind = only_kind().unwrap_or((i * 7 + t) % KINDS);
                    let log = |what| {
                        eprintln!("{:9.3} s thread {t} call {i} kind {kind} {what}", began.elapsed().as_secs_f64())
                    };
                    if tracing {
                        log("starts");
                    }
                    let got = call(&ctx, s, &shared, kind);
                    if tracing {
                        log("ends");
                    }
                    let want = &alone[kind];
                    // scatters add in any order on a GPU: equal to f32 rounding, not bitwise
                    let close = got.len() == want.len()
                        && got.iter().zip(want.iter()).all(|(g, w)| (g - w).abs() <= 1e-5 * (1.0 + w.abs()));
                    assert!(close, "thread {t}, call {i} (kind {kind}) differs from the call alone");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a thread failed");
    }
    let streams = if share_one_stream { "one shared stream" } else { "their own streams" };
    println!("{THREADS} threads x {calls} mixed calls on {streams} agreed with the calls alone");
}

#[test]
fn eight_threads_with_their_own_streams_agree_with_one() {
    threads_agree_with_one(false);
}

/// Calls that queue several launches through the stream's scratch (spmm on bool events: packed
/// bits, then the product) hold it until all are queued, so threads sharing the stream cannot
/// queue theirs in between.
#[test]
fn eight_threads_sharing_one_stream_agree_with_one() {
    threads_agree_with_one(true);
}
